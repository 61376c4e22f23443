//go:build !linux

package wal

import "github.com/cockroachdb/pebble/v2/vfs"

// zeroFillDirect is Linux only (O_DIRECT); elsewhere prepare writes zeros
// through the page cache.
func zeroFillDirect(vfs.FS, string, int64) (bool, error) { return false, nil }

// writtenOut is Linux only: elsewhere a segment from an earlier process is
// not recycled.
func writtenOut(vfs.FS, string, int64) bool { return false }
