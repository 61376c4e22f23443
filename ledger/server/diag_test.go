package server

import (
	"fmt"
	"strings"
	"time"
)

// connStates describes what s's TCP connections are doing, for failure
// messages.
func (s *Server) connStates() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for c := range s.conns {
		fmt.Fprintf(&b, "\n\t%s", c.state())
	}
	return b.String()
}

func (c *conn) state() string {
	c.out.mu.Lock()
	queued := len(c.out.q)
	c.out.mu.Unlock()
	reader := [...]string{waitNone: "busy", waitRequest: "waiting for a request", waitToken: "waiting for a token"}[c.readWait.Load()]
	writer := "not writing"
	if t := c.writeFrom.Load(); t != 0 {
		writer = fmt.Sprintf("in a write for %v", time.Since(time.Unix(0, t)).Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: reader %s, %d tokens held, %d answers queued; writer %s, %d bytes written; socket: %s",
		c.nc.RemoteAddr(), reader, len(c.sem), queued, writer, c.written.Load(), sockState(c.nc))
}
