//go:build !linux

package wal

import "github.com/cockroachdb/pebble/v2/vfs"

// allocate is Linux only (fallocate): elsewhere the preparer writes zeros.
func allocate(vfs.File, int64) (bool, error) { return false, nil }

// dropPages is Linux only (posix_fadvise): elsewhere closed segments stay
// in the page cache until the kernel evicts them.
func dropPages(vfs.File) bool { return false }
