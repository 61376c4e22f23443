package server

import (
	"net"
	"sync"
	"time"
)

// limitListener counts the HTTP listener's connections against
// Config.MaxHTTPConns. A connection beyond it is answered 503 and closed
// at once, so that a client holding every slot cannot make others queue
// in the kernel's backlog without a word.
type limitListener struct {
	net.Listener
	s *Server
}

// busyResponse is written, unencrypted, to a plain HTTP connection over
// the limit.
const busyResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 21\r\n\r\ntoo many connections\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.httpOpen.Add(1) <= int64(l.s.cfg.MaxHTTPConns) {
			return &countedConn{Conn: nc, s: l.s}, nil
		}
		l.s.httpOpen.Add(-1)
		l.s.m.httpRejected.Add(1)
		go l.refuse(nc) // never block Accept on a client
	}
}

func (l *limitListener) refuse(nc net.Conn) {
	defer nc.Close()
	if l.s.cfg.TLS != nil {
		return // a plain answer would not parse as TLS
	}
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write([]byte(busyResponse))
}

// countedConn gives its slot back once, on the first Close.
type countedConn struct {
	net.Conn
	s    *Server
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.s.httpOpen.Add(-1) })
	return c.Conn.Close()
}
