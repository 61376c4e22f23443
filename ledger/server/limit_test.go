package server

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTTPConnLimit: connections beyond MaxHTTPConns are answered 503 and
// closed; once a slot frees, requests are served again.
func TestHTTPConnLimit(t *testing.T) {
	f := startServer(t, Config{MaxHTTPConns: 2})
	addr := f.s.HTTPAddr().String()
	var held []net.Conn
	for range 2 {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, nc)
	}
	// the server counts a connection once it accepted it
	require.Eventually(t, func() bool { return f.s.httpOpen.Load() == 2 }, 5*time.Second, time.Millisecond)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, uint64(1), f.s.m.httpRejected.Load())

	held[0].Close()
	require.Eventually(t, func() bool { return f.s.httpOpen.Load() == 1 }, 5*time.Second, time.Millisecond)
	code, _ := httpDo(t, "GET", f.httpURL()+"/v1/indexes", "")
	assert.Equal(t, http.StatusOK, code)
	held[1].Close()
	http.DefaultClient.CloseIdleConnections()
}
