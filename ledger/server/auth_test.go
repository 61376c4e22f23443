package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	rwToken = "rw-token-0123456789abcdef"
	roToken = "ro-token-0123456789abcdef"
)

var testTokens = []Token{{Secret: rwToken, Scope: ReadWrite}, {Secret: roToken, Scope: ReadOnly}}

func TestReadTokens(t *testing.T) {
	toks, err := ReadTokens(strings.NewReader("# ops team\n\nread_write " + rwToken + "\nread_only " + roToken + "\n" + rwToken + "x\n"))
	require.NoError(t, err)
	assert.Equal(t, []Token{{rwToken, ReadWrite}, {roToken, ReadOnly}, {rwToken + "x", ReadWrite}}, toks)
	for _, bad := range []string{"", "# none\n", "read_write short\n", "admin " + rwToken + "\n", "read_only a b\n"} {
		_, err := ReadTokens(strings.NewReader(bad))
		assert.ErrorIs(t, err, ErrTokenFile, "%q", bad)
		if err != nil {
			assert.NotContains(t, err.Error(), rwToken, "errors never show a secret")
		}
	}
}

// authReq makes an HTTP request with the given Authorization header value.
func authReq(t *testing.T, hc *http.Client, method, url, auth, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPAuthMatrix: no token, a wrong token, a read_only token on a
// write, and the right tokens, on every kind of route.
func TestHTTPAuthMatrix(t *testing.T) {
	f := startServer(t, Config{Tokens: testTokens})
	u := f.httpURL()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const dep = `{"type":"deposit","account":1,"amount":5}`
	cases := []struct {
		method, path, auth, body string
		want                     int
	}{
		{"GET", "/healthz", "", "", 200},
		{"GET", "/v1/indexes", "", "", 401},
		{"GET", "/v1/indexes", "Bearer ", "", 401},
		{"GET", "/v1/indexes", "Basic " + rwToken, "", 401},
		{"GET", "/v1/indexes", "Bearer wrong-token-0123456789", "", 401},
		{"GET", "/v1/indexes", "Bearer " + roToken, "", 200},
		{"GET", "/v1/indexes", "Bearer " + rwToken, "", 200},
		{"GET", "/metrics", "", "", 401},
		{"GET", "/metrics", "Bearer " + roToken, "", 200},
		{"GET", "/v1/accounts/1/balance", "Bearer " + roToken, "", 200},
		{"POST", "/v1/ops", "", dep, 401},
		{"POST", "/v1/ops", "Bearer wrong-token-0123456789", dep, 401},
		{"POST", "/v1/ops", "Bearer " + roToken, dep, 403},
		{"POST", "/v1/snapshot", "Bearer " + roToken, "", 403},
		{"POST", "/v1/ops", "Bearer " + rwToken, dep, 200},
		{"POST", "/v1/snapshot", "Bearer " + rwToken, "", 200},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, authReq(t, hc, c.method, u+c.path, c.auth, c.body), "%s %s %q", c.method, c.path, c.auth)
	}
	x, err := f.l.Indexes()
	require.NoError(t, err)
	assert.Equal(t, f.base+1, x.Sequenced, "only the read_write deposit applied")
	m := &f.s.m
	assert.Equal(t, uint64(5), m.authFails[1][0].Load(), "missing")
	assert.Equal(t, uint64(2), m.authFails[1][1].Load(), "invalid")
	assert.Equal(t, uint64(2), m.authFails[1][2].Load(), "forbidden")
}

// TestTCPAuthMatrix: the same over the binary protocol, where the token
// travels once, in the connection's first frame.
func TestTCPAuthMatrix(t *testing.T) {
	f := startServer(t, Config{Tokens: testTokens})
	addr := f.s.Addr().String()
	ctx := context.Background()

	// no token: the first request is refused and the connection closed
	c, err := client.Dial(ctx, addr)
	require.NoError(t, err)
	_, err = c.Indexes(ctx)
	assert.ErrorIs(t, err, wire.ErrUnauthorized)
	c.Close()

	// a wrong token fails at dial
	_, err = client.Dial(ctx, addr, client.WithToken("wrong-token-0123456789"))
	assert.ErrorIs(t, err, wire.ErrUnauthorized)

	// read_only: reads work, writes are refused, the connection stays
	ro, err := client.Dial(ctx, addr, client.WithToken(roToken), client.WithConns(1))
	require.NoError(t, err)
	defer ro.Close()
	_, err = ro.Balance(ctx, 1)
	require.NoError(t, err)
	_, err = ro.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 5}, ledger.Committed)
	assert.ErrorIs(t, err, wire.ErrForbidden)
	_, _, err = ro.SubmitBatch(ctx, []ledger.Op{ledger.Deposit{Account: 1, Amount: 5}}, ledger.Committed)
	assert.ErrorIs(t, err, wire.ErrForbidden)
	_, err = ro.Snapshot(ctx)
	assert.ErrorIs(t, err, wire.ErrForbidden)
	_, err = ro.Indexes(ctx)
	require.NoError(t, err, "still connected")

	// read_write
	rw, err := client.Dial(ctx, addr, client.WithToken(rwToken))
	require.NoError(t, err)
	defer rw.Close()
	res, err := rw.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 5}, ledger.Snapshot)
	require.NoError(t, err)
	assert.Equal(t, f.base+1, res.ID, "only the read_write deposit applied")

	// a raw connection whose first frame is not a hello
	r := newRaw(t, f)
	e := wire.NewEncoder()
	e.SubmitWait(7, ledger.Committed, ledger.Deposit{Account: 2, Amount: 1})
	r.send(e.Bytes())
	r.wantError(7, wire.CodeUnauthorized)
	r.wantClosed()
	m := &f.s.m
	assert.Equal(t, uint64(2), m.authFails[0][0].Load(), "missing")
	assert.Equal(t, uint64(1), m.authFails[0][1].Load(), "invalid")
	assert.Equal(t, uint64(3), m.authFails[0][2].Load(), "forbidden")
}

// testPKI is a CA made in the test, with a server certificate for
// 127.0.0.1 and a client certificate, written as PEM files.
type testPKI struct {
	dir                           string
	caFile, certFile, keyFile     string
	clientCertFile, clientKeyFile string
	pool                          *x509.CertPool
	clientCert                    tls.Certificate
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	writePEM := func(name, typ string, der []byte) string {
		path := filepath.Join(p.dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	now := time.Now()
	caKey := key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lanework test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err = x509.ParseCertificate(caDER)
	require.NoError(t, err)
	p.caFile = writePEM("ca.pem", "CERTIFICATE", caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	issue := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: ips,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		require.NoError(t, err)
		kder, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		return der, kder
	}
	der, kder := issue(2, "ledger server", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	p.certFile, p.keyFile = writePEM("server.pem", "CERTIFICATE", der), writePEM("server-key.pem", "EC PRIVATE KEY", kder)
	der, kder = issue(3, "ledger client", x509.ExtKeyUsageClientAuth, nil)
	p.clientCertFile, p.clientKeyFile = writePEM("client.pem", "CERTIFICATE", der), writePEM("client-key.pem", "EC PRIVATE KEY", kder)
	p.clientCert, err = tls.LoadX509KeyPair(p.clientCertFile, p.clientKeyFile)
	require.NoError(t, err)
	return p
}

// TestTLS: both listeners speak TLS with a certificate from a CA made in
// the test; clients verify it, and a client that does not trust the CA,
// or speaks plain TCP, gets nothing.
func TestTLS(t *testing.T) {
	p := newTestPKI(t)
	cfg, err := LoadTLS(p.certFile, p.keyFile, "")
	require.NoError(t, err)
	f := startServer(t, Config{TLS: cfg, Tokens: testTokens})
	ctx := context.Background()

	c, err := client.Dial(ctx, f.s.Addr().String(), client.WithTLS(&tls.Config{RootCAs: p.pool}), client.WithToken(rwToken))
	require.NoError(t, err)
	defer c.Close()
	res, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 5}, ledger.Committed)
	require.NoError(t, err)
	assert.Equal(t, ledger.OK, res.Fail)

	_, err = client.Dial(ctx, f.s.Addr().String(), client.WithTLS(&tls.Config{}), client.WithToken(rwToken))
	var uae x509.UnknownAuthorityError
	assert.True(t, errors.As(err, &uae), "unknown CA refused: %v", err)

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool}}}
	defer hc.CloseIdleConnections()
	https := "https://" + f.s.HTTPAddr().String()
	assert.Equal(t, 200, authReq(t, hc, "GET", https+"/v1/indexes", "Bearer "+roToken, ""))
	assert.Equal(t, 401, authReq(t, hc, "GET", https+"/v1/indexes", "", ""))

	// plain TCP to the TLS port: the hello is not a TLS record
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = client.Dial(dctx, f.s.Addr().String(), client.WithToken(rwToken))
	assert.Error(t, err)
}

// TestMutualTLS: with a client CA, a client without a certificate from it
// is refused in the handshake, on both listeners.
func TestMutualTLS(t *testing.T) {
	p := newTestPKI(t)
	cfg, err := LoadTLS(p.certFile, p.keyFile, p.caFile)
	require.NoError(t, err)
	f := startServer(t, Config{TLS: cfg, Tokens: testTokens})
	ctx := context.Background()

	c, err := client.Dial(ctx, f.s.Addr().String(), client.WithToken(rwToken),
		client.WithTLS(&tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.clientCert}}))
	require.NoError(t, err)
	_, err = c.Indexes(ctx)
	require.NoError(t, err)
	c.Close()

	// TLS 1.3 reports the missing certificate after the client's side of
	// the handshake, at the first read: the hello fails.
	_, err = client.Dial(ctx, f.s.Addr().String(), client.WithToken(rwToken), client.WithTLS(&tls.Config{RootCAs: p.pool}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest("GET", "https://"+f.s.HTTPAddr().String()+"/v1/indexes", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+roToken)
	_, err = hc.Do(req)
	require.Error(t, err, "no client certificate")

	hc2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.clientCert}}}}
	defer hc2.CloseIdleConnections()
	assert.Equal(t, 200, authReq(t, hc2, "GET", "https://"+f.s.HTTPAddr().String()+"/v1/indexes", "Bearer "+roToken, ""))
	// The HTTP listener serves a copy of the config: http.Server.ServeTLS
	// adds HTTP/2 to its config, which on the caller's (the msgpack
	// listener's too) raced that listener's handshakes.
	assert.Empty(t, cfg.NextProtos, "serving changed the caller's TLS config")
}

// TestExposedRefused: a non-loopback address needs tokens and TLS, or
// Insecure. New refuses before listening, so nothing binds 0.0.0.0 here.
func TestExposedRefused(t *testing.T) {
	l, err := ledger.Open(ledger.Config{Dir: t.TempDir(), MaxAccounts: testAccounts})
	require.NoError(t, err)
	defer l.Close()
	p := newTestPKI(t)
	tcfg, err := LoadTLS(p.certFile, p.keyFile, "")
	require.NoError(t, err)
	for _, c := range []Config{
		{Addr: "0.0.0.0:0", HTTPAddr: "off"},
		{Addr: ":7070", HTTPAddr: "off"},
		{Addr: "127.0.0.1:0", HTTPAddr: "[::]:0"},
		{Addr: "0.0.0.0:0", HTTPAddr: "off", Tokens: testTokens},
		{Addr: "0.0.0.0:0", HTTPAddr: "off", TLS: tcfg},
		{Addr: "example.com:7070", HTTPAddr: "off", TLS: tcfg},
	} {
		_, err := New(l, c)
		assert.ErrorIs(t, err, ErrExposed, "%s %s", c.Addr, c.HTTPAddr)
	}
	for _, c := range []Config{
		{Addr: "127.0.0.1:0", HTTPAddr: "[::1]:0"},
		{Addr: "localhost:0", HTTPAddr: "off"},
		{Addr: "0.0.0.0:0", HTTPAddr: "off", Tokens: testTokens, TLS: tcfg},
		{Addr: "0.0.0.0:0", HTTPAddr: "off", Insecure: true},
	} {
		_, err := New(l, c)
		assert.NoError(t, err, "%s %s", c.Addr, c.HTTPAddr)
	}
}

// TestHelloIsDueAtOnce: on a server with tokens, a connection that sends
// no hello is closed after ReadTimeout, not held for IdleTimeout.
func TestHelloIsDueAtOnce(t *testing.T) {
	f := startServer(t, Config{Tokens: testTokens, ReadTimeout: 200 * time.Millisecond, IdleTimeout: time.Hour})
	r := newRaw(t, f)
	r.wantClosed()
}

// TestTokenOnServerWithout: a client with a token talks to a server
// without tokens: its hello is answered read_write.
func TestTokenOnServerWithout(t *testing.T) {
	f := startServer(t, Config{})
	c := f.dial(t, client.WithToken(rwToken))
	res, err := c.SubmitAndWait(context.Background(), ledger.Deposit{Account: 1, Amount: 5}, ledger.Committed)
	require.NoError(t, err)
	assert.Equal(t, ledger.OK, res.Fail)
}

// TestTLSBusyClosesBeforeHandshake: beyond MaxConns a TLS connection is
// closed before its handshake, and the client's dial fails.
func TestTLSBusyClosesBeforeHandshake(t *testing.T) {
	p := newTestPKI(t)
	cfg, err := LoadTLS(p.certFile, p.keyFile, "")
	require.NoError(t, err)
	f := startServer(t, Config{TLS: cfg, Tokens: testTokens, MaxConns: 1})
	opts := []client.Option{client.WithToken(rwToken), client.WithTLS(&tls.Config{RootCAs: p.pool}), client.WithConns(1)}
	c := f.dial(t, opts...)
	_, err = c.Indexes(context.Background())
	require.NoError(t, err)
	_, err = client.Dial(context.Background(), f.s.Addr().String(), opts...)
	require.Error(t, err)
	assert.Equal(t, uint64(1), f.s.m.rejected.Load())
}
