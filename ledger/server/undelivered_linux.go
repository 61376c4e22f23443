package server

import (
	"errors"
	"math"
	"net"
	"syscall"
	"time"
)

// tcpUserTimeout is TCP_USER_TIMEOUT (linux/tcp.h), which package syscall
// does not define.
const tcpUserTimeout = 0x12

// boundUnacked makes the kernel abort tc once data written to it stays
// unacknowledged, or unsent behind a closed window, for d. A write blocks
// only when the socket's send buffer (up to net.ipv4.tcp_wmem's 4 MiB) is
// full, so without this a client that never reads small answers can keep
// a connection for minutes without any write reaching WriteTimeout.
func boundUnacked(tc *net.TCPConn, d time.Duration) error {
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	ms := int(min(max(d.Milliseconds(), 1), math.MaxInt32)) // 0 would turn it off
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, ms)
	}); err != nil {
		return err
	}
	return serr
}

// unacked reports whether err is the kernel's abort of a connection
// whose peer left data unacknowledged past boundUnacked's limit.
func unacked(err error) bool { return errors.Is(err, syscall.ETIMEDOUT) }
