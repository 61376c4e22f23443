package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadyz: not ready until the server serves, then ready; like
// /healthz it needs no token.
func TestReadyz(t *testing.T) {
	l, err := ledger.Open(ledger.Config{Dir: t.TempDir(), MaxAccounts: testAccounts})
	require.NoError(t, err)
	defer l.Close()
	s, err := New(l, Config{Addr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Tokens: testTokens, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "not listening yet")
	require.NoError(t, s.Start())
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()
	resp, err := http.Get("http://" + s.HTTPAddr().String() + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestPprof: /debug/pprof/ exists only with Pprof, and then needs a
// read_write token.
func TestPprof(t *testing.T) {
	f := startServer(t, Config{})
	code, _ := httpDo(t, "GET", f.httpURL()+"/debug/pprof/", "")
	assert.Equal(t, http.StatusNotFound, code)

	f = startServer(t, Config{Pprof: true, Tokens: testTokens})
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	assert.Equal(t, http.StatusUnauthorized, authReq(t, hc, "GET", f.httpURL()+"/debug/pprof/", "", ""))
	assert.Equal(t, http.StatusForbidden, authReq(t, hc, "GET", f.httpURL()+"/debug/pprof/", "Bearer "+roToken, ""))
	assert.Equal(t, http.StatusOK, authReq(t, hc, "GET", f.httpURL()+"/debug/pprof/", "Bearer "+rwToken, ""))
	assert.Equal(t, http.StatusOK, authReq(t, hc, "GET", f.httpURL()+"/debug/pprof/goroutine?debug=1", "Bearer "+rwToken, ""))
}

// lockedBuffer is a log sink for concurrent handlers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAccessLog: at debug level each HTTP request logs one line; a failed
// authentication logs a warning that does not contain the token.
func TestAccessLog(t *testing.T) {
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := startServer(t, Config{Logger: logger, Tokens: testTokens})
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	assert.Equal(t, 200, authReq(t, hc, "GET", f.httpURL()+"/v1/indexes", "Bearer "+roToken, ""))
	assert.Equal(t, 200, authReq(t, hc, "GET", f.httpURL()+"/v1/accounts/3/balance", "Bearer "+roToken, ""))
	assert.Equal(t, 401, authReq(t, hc, "GET", f.httpURL()+"/v1/indexes", "Bearer not-a-token-0123456789", ""))
	var access, warn []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		switch {
		case strings.Contains(line, `"msg":"http request"`):
			access = append(access, line)
		case strings.Contains(line, `"level":"WARN"`):
			warn = append(warn, line)
		}
	}
	require.Len(t, access, 3, buf.String())
	assert.Contains(t, access[1], `"route":"/v1/accounts/{id}/balance"`)
	assert.Contains(t, access[1], `"status":200`)
	assert.Contains(t, access[2], `"status":401`)
	require.Len(t, warn, 1)
	assert.Contains(t, warn[0], `"reason":"invalid"`)
	assert.NotContains(t, buf.String(), "not-a-token-0123456789", "tokens are never logged")
	assert.NotContains(t, buf.String(), roToken)
}
