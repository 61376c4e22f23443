//go:build !linux

package ledger

import "unsafe"

func adviseHuge(unsafe.Pointer, uintptr) {}
