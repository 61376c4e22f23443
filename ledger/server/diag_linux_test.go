package server

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"unsafe"
)

// sockState reports what the kernel holds for nc: bytes received and not
// read, bytes written and not acknowledged, and TCP's retransmissions.
func sockState(nc net.Conn) string {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return "not a socket"
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err.Error()
	}
	var s string
	cerr := rc.Control(func(fd uintptr) {
		var in, out int32
		var ti syscall.TCPInfo
		tl := uint32(unsafe.Sizeof(ti))
		_, _, e1 := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&in)))
		_, _, e2 := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&out)))
		_, _, e3 := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&ti)), uintptr(unsafe.Pointer(&tl)), 0)
		s = fmt.Sprintf("%d bytes unread, %d unacknowledged; TCP state %d, %d retransmissions, backoff %d, probes %d",
			in, out, ti.State, ti.Total_retrans, ti.Backoff, ti.Probes)
		for _, e := range []syscall.Errno{e1, e2, e3} {
			if e != 0 {
				s += fmt.Sprintf(" (%v)", error(e))
			}
		}
	})
	if cerr != nil {
		if errors.Is(cerr, net.ErrClosed) {
			return "closed"
		}
		return cerr.Error()
	}
	return s
}
