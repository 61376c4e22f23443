//go:build !linux

package server

import (
	"net"
	"time"
)

// boundUnacked does nothing here: only write deadlines close a client
// that does not read (see undelivered_linux.go).
func boundUnacked(*net.TCPConn, time.Duration) error { return nil }

func unacked(error) bool { return false }
