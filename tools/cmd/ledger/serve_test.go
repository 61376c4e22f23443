package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
)

var servingLine = regexp.MustCompile(`on tcp (\S+), http (\S+)`)

// TestServeThroughAppRun runs `ledger serve` in process; canceling the
// context plays the part of the signal.
// startServe runs `ledger serve` on dir in this process, on loopback ports,
// with extra flags, and returns its outputs, the serving line's submatches
// (TCP address, HTTP URL) and a function that stops it and returns its error.
func startServe(t *testing.T, dir string, extra ...string) (out, errb *syncBuffer, m []string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb = new(syncBuffer), new(syncBuffer)
	done := make(chan error, 1)
	args := append([]string{"ledger", "serve", "--dir", dir,
		"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--max-accounts", "1000"}, extra...)
	go func() { done <- newApp(out, errb).RunContext(ctx, args) }()
	stop = func() error { cancel(); return <-done }
	if !assert.Eventually(t, func() bool {
		m = servingLine.FindStringSubmatch(out.String())
		return m != nil
	}, 20*time.Second, 5*time.Millisecond, "serve never printed its addresses: %s", errb.String()) {
		_ = stop()
		t.FailNow()
	}
	return out, errb, m, stop
}

func TestServeLowLatencyWarns(t *testing.T) {
	_, errb, _, stop := startServe(t, t.TempDir(), "--wait-strategy", "low-latency")
	require.NoError(t, stop())
	assert.Contains(t, errb.String(), "level=WARN")
	assert.Contains(t, errb.String(), "low-latency keeps every stage polling")

	_, errb, _, stop = startServe(t, t.TempDir())
	require.NoError(t, stop())
	assert.NotContains(t, errb.String(), "level=WARN", "balanced starts without a warning")
}

func TestServeThroughAppRun(t *testing.T) {
	dir := t.TempDir()
	out, _, m, stop := startServe(t, dir)
	_, se, code := runApp(t, "account", "create", "--addr", m[1], "--ledger", "1", "7")
	require.Equal(t, 0, code, se)
	so, se, code := runApp(t, "deposit", "--addr", m[1], "7", "70")
	require.Equal(t, 0, code, se)
	require.Contains(t, so, "account 7 credits_posted +70 = 70")
	_, se, code = runApp(t, "verify", "--dir", dir)
	require.Equal(t, 1, code, "verify of a directory the server has open")
	require.Contains(t, se, "in use by an open ledger")
	resp, err := http.Get(m[2] + "/v1/accounts/7/balance?")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var bal struct{ Balance int64 }
	require.NoError(t, json.Unmarshal(body, &bal))
	require.NoError(t, stop())
	require.Contains(t, out.String(), "stopped cleanly")
	// the directory reopens with the deposit in it
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	require.NoError(t, err)
	b, err := l.Balance(7)
	require.NoError(t, err)
	assert.Equal(t, int64(70), b)
	require.NoError(t, l.Close())
}

func TestServeBadAddress(t *testing.T) {
	_, stderr, code := runApp(t, "serve", "--dir", t.TempDir(), "--max-accounts", "100", "--addr", "127.0.0.1:99999")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "listen")
}

func TestServeClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-id", "1", "--node-id", "1"}, "--peers"},
		{[]string{"--cluster-id", "1", "--node-id", "1", "--peers", "1=nowhere"}, "--peers"},
		{[]string{"--cluster-id", "1", "--node-id", "4", "--peers", "1=127.0.0.1:7101"}, "node 4"},
		{[]string{"--cluster-id", "1", "--node-id", "1", "--peers", "1=10.0.0.1:7101"}, "loopback"},
	} {
		_, stderr, code := runApp(t, append([]string{"serve", "--dir", t.TempDir(), "--http-addr", "127.0.0.1:0"}, tc.args...)...)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		require.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

// buildBinary compiles the command into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ledger")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// TestSIGTERMDuringLoad runs the real binary, loads it from several
// clients, sends SIGTERM mid-load, and checks that the process exits 0 and
// that every acknowledged transaction is in the reopened ledger with the
// outcome the client was told.
func TestSIGTERMDuringLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--dir", dir, "--addr", "127.0.0.1:0", "--http-addr", "off", "--max-accounts", "1000")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "no output from serve")
	m := regexp.MustCompile(`on tcp (\S+),`).FindStringSubmatch(lines.Text())
	require.NotNil(t, m, lines.Text())
	rest := make(chan string, 1)
	go func() {
		var all string
		for lines.Scan() {
			all += lines.Text() + "\n"
		}
		rest <- all
	}()

	ctx := context.Background()
	c, err := client.Dial(ctx, m[1], client.WithConns(4))
	require.NoError(t, err)
	defer c.Close()
	var mu sync.Mutex
	acked := map[ledger.TxID]ledger.Result{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				op := ledger.Op(ledger.Deposit{Account: uint64(1 + g), Amount: uint64(1 + i%7)})
				if i%3 == 0 {
					op = ledger.Transfer{From: uint64(1 + g), To: uint64(100 + g), Amount: 2}
				}
				if i%5 == 0 { // batches, acknowledged as a whole
					first, last, err := c.SubmitBatch(ctx, []ledger.Op{op, ledger.Deposit{Account: 500, Amount: 1}}, ledger.Committed)
					if err != nil {
						return
					}
					mu.Lock()
					acked[first] = ledger.Result{ID: first}
					acked[last] = ledger.Result{ID: last}
					mu.Unlock()
					continue
				}
				res, err := c.SubmitAndWait(ctx, op, ledger.Committed)
				if err != nil {
					return // the server is going away: unacknowledged
				}
				mu.Lock()
				acked[res.ID] = res
				mu.Unlock()
			}
		})
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 2000
	}, 60*time.Second, time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	wg.Wait()
	// Read to the end before Wait, which closes the pipe once the process
	// has exited: the last line could be lost otherwise.
	out := <-rest
	require.NoError(t, cmd.Wait(), "exit status 0")
	assert.Contains(t, out, "stopped cleanly")

	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	require.NoError(t, err)
	defer l.Close()
	x, err := l.Indexes()
	require.NoError(t, err)
	for id, want := range acked {
		require.LessOrEqual(t, id, x.Committed, "acknowledged tx %d lost", id)
		got, err := l.Result(id)
		require.NoError(t, err)
		if want.Kind != 0 {
			require.Equal(t, want.Kind, got.Kind, "tx %d", id)
			require.Equal(t, want.Fail, got.Fail, "tx %d", id)
			require.Equal(t, want.Entries, got.Entries, "tx %d", id)
		}
	}
	t.Logf("%d acknowledged transactions survived SIGTERM (committed %d)", len(acked), x.Committed)
}

// TestServeRefusesExposedWithoutTokenAndTLS: a listener beyond loopback
// without a token and TLS is refused before anything listens, with exit 2
// and a message naming the flags to add.
func TestServeRefusesExposedWithoutTokenAndTLS(t *testing.T) {
	for _, args := range [][]string{
		{"--addr", "0.0.0.0:0", "--http-addr", "off"},
		{"--addr", "127.0.0.1:0", "--http-addr", "0.0.0.0:0"},
		{"--addr", "0.0.0.0:0", "--http-addr", "off", "--token", "serve-token-0123456789"},
	} {
		_, stderr, code := runApp(t, append([]string{"serve", "--dir", t.TempDir(), "--max-accounts", "100"}, args...)...)
		require.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, "--token-file")
		assert.Contains(t, stderr, "--tls-cert")
		assert.Contains(t, stderr, "--insecure")
	}
	_, stderr, code := runApp(t, "serve", "--dir", t.TempDir(), "--max-accounts", "100", "--token-file", filepath.Join(t.TempDir(), "none"))
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "bad token file")
}

// writeTestPKI writes a CA, and a server certificate for 127.0.0.1 signed
// by it, as PEM files in dir; it returns their paths.
func writeTestPKI(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	now := time.Now()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srvT := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "ledger"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, srvT, caCert, &k.PublicKey, caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(k)
	require.NoError(t, err)
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", der), write("key.pem", "EC PRIVATE KEY", kder)
}

// TestServeWithTokenAndTLS: with a token file and TLS the server starts,
// and the CLI's client commands reach it with --token and --tls-ca, and
// not without them. (Loopback only: the exposed check itself is in the
// server's tests, which never listen beyond loopback.)
func TestServeWithTokenAndTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestPKI(t, t.TempDir())
	tokFile := filepath.Join(t.TempDir(), "tokens")
	const rw, ro = "cli-rw-token-0123456789", "cli-ro-token-0123456789"
	require.NoError(t, os.WriteFile(tokFile, []byte("read_write "+rw+"\nread_only "+ro+"\n"), 0o600))
	_, _, m, stop := startServe(t, dir, "--token-file", tokFile, "--tls-cert", cert, "--tls-key", key)
	defer func() { require.NoError(t, stop()) }()
	assert.True(t, strings.HasPrefix(m[2], "https://"), m[2])

	_, se, code := runApp(t, "account", "create", "--addr", m[1], "--token", rw, "--tls-ca", ca, "--ledger", "1", "7")
	require.Equal(t, 0, code, se)
	so, se, code := runApp(t, "deposit", "--addr", m[1], "--token", rw, "--tls-ca", ca, "7", "70")
	require.Equal(t, 0, code, se)
	assert.Contains(t, so, "account 7 credits_posted +70 = 70")
	_, se, code = runApp(t, "deposit", "--addr", m[1], "--token", ro, "--tls-ca", ca, "7", "70")
	assert.Equal(t, 1, code, se)
	assert.Contains(t, se, "forbidden")
	_, se, code = runApp(t, "deposit", "--addr", m[1], "--tls-ca", ca, "7", "70")
	assert.Equal(t, 1, code, se)
	assert.Contains(t, se, "unauthorized")
	_, se, code = runApp(t, "deposit", "--addr", m[1], "--token", rw, "--tls", "--timeout", "5s", "7", "70")
	assert.Equal(t, 1, code, "the system roots do not know the test CA: %s", se)
	assert.Contains(t, se, "certificate")
}

// TestServeLogFlags: --log-format json with --log-level debug writes one
// JSON line per HTTP request; bad values exit 2.
func TestServeLogFlags(t *testing.T) {
	_, errb, m, stop := startServe(t, t.TempDir(), "--log-format", "json", "--log-level", "debug")
	resp, err := http.Get(m[2] + "/v1/indexes")
	require.NoError(t, err)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	require.NoError(t, stop())
	var lines int
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not JSON: %q", line)
		if rec["msg"] == "http request" && rec["route"] == "/v1/indexes" {
			lines++
		}
	}
	assert.Equal(t, 1, lines, errb.String())
	for _, bad := range [][]string{{"--log-level", "loud"}, {"--log-format", "xml"}} {
		_, stderr, code := runApp(t, append([]string{"serve", "--dir", t.TempDir()}, bad...)...)
		assert.Equal(t, 2, code, stderr)
	}
}

// --dedup-retention and --dedup-retention-txs reach the ledger's Config: a
// count limit below the in-memory window is refused as a usage error that
// names the field.
func TestServeDedupRetentionFlags(t *testing.T) {
	_, stderr, code := runApp(t, "serve", "--dir", t.TempDir(), "--max-accounts", "100", "--dedup-retention", "1h", "--dedup-retention-txs", "5")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "DedupRetentionTxs 5 below DedupWindow")
	_, stderr, code = runApp(t, "serve", "--dir", t.TempDir(), "--max-accounts", "100", "--dedup-retention", "soon")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "dedup-retention")
}
