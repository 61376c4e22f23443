//go:build unix

package wal

import (
	"os"
	"syscall"
)

// fileIdentity tells files apart: device and inode.
type fileIdentity struct{ dev, ino uint64 }

// fileID is fi's device and inode, if the filesystem is the OS's.
func fileID(fi os.FileInfo) (fileIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}, false
	}
	return fileIdentity{uint64(st.Dev), uint64(st.Ino)}, true // the types differ by platform
}

// linkCount is fi's number of hard links, if the filesystem is the OS's.
func linkCount(fi os.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true // the types differ by platform
}
