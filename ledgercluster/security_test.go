package ledgercluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
)

// testTLS returns a replica's listener and dialer TLS configurations: one
// certificate for 127.0.0.1, signed by a throwaway CA, used both ways
// (mutual TLS).
func testTLS(t *testing.T) (srv, cli *tls.Config) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "replica"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert},
		&tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}
}

// TestTokensAndTLS: replicas talk raft over mutual TLS with a shared peer
// token; one started with another token is refused by the others (they
// commit without it) until it restarts with the right one. The client API
// takes bearer tokens by the ledger server's rules, over TLS.
func TestTokensAndTLS(t *testing.T) {
	srvTLS, cliTLS := testTLS(t)
	const peerToken, rw, ro = "peer-secret-0123456789", "rw-secret-0123456789", "ro-secret-0123456789"
	var lns []net.Listener
	peers := map[uint64]string{}
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		peers[uint64(i+1)] = ln.Addr().String()
	}
	root := t.TempDir()
	cfg := func(i int, token string) Config {
		return Config{ClusterID: 5, NodeID: uint64(i + 1), Peers: peers, Dir: filepath.Join(root, strconv.Itoa(i+1)),
			Ledger: ledger.Config{MaxAccounts: 16}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Tokens:    []server.Token{{Secret: rw, Scope: server.ReadWrite}, {Secret: ro, Scope: server.ReadOnly}},
			PeerToken: token, TLS: srvTLS, PeerTLS: cliTLS}
	}
	var nodes []*Node
	for i := range 3 {
		token := peerToken
		if i == 2 {
			token = "another-secret-0123456789"
		}
		c := cfg(i, token)
		c.Listener = lns[i]
		n, err := Start(c)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	var ld int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if nodes[0].Status().Leading || nodes[1].Status().Leading {
			ld = map[bool]int{true: 0, false: 1}[nodes[0].Status().Leading]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader among the replicas with the peer token")
		}
	}
	if nodes[2].Status().Leading {
		t.Fatal("the replica with another token leads")
	}
	ctx := context.Background()
	if _, err := nodes[ld].SubmitAndWait(ctx, ledger.CreateAccount{ID: 1, Ledger: 1}, ledger.Replicated); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // heartbeats flow meanwhile; replica 3 must learn nothing
	if got := nodes[2].Status().Applied; got != 0 {
		t.Fatalf("the replica with another token applied tx %d", got)
	}
	nodes[2].Stop()
	ln, err := net.Listen("tcp", peers[3])
	if err != nil {
		t.Fatal(err)
	}
	c := cfg(2, peerToken)
	c.Listener = ln
	if nodes[2], err = Start(c); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); nodes[2].Status().Applied == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("replica 3 did not catch up with the right token")
		}
	}

	// The client API over TLS, with tokens.
	srv := httptest.NewUnstartedServer(Handler(nodes[ld]))
	srv.TLS = srvTLS.Clone()
	srv.TLS.ClientAuth = tls.NoClientCert
	srv.StartTLS()
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cliTLS}}
	defer hc.CloseIdleConnections()
	get := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/status", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(""); got != http.StatusUnauthorized {
		t.Errorf("no token: %d", got)
	}
	if got := get("wrong-secret-0123456789"); got != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", got)
	}
	if got := get(ro); got != http.StatusOK {
		t.Errorf("read_only token on a GET: %d", got)
	}
	cl := NewTLSClient(cliTLS, strings.TrimPrefix(srv.URL, "https://"))
	defer cl.Close()
	cl.Token = ro
	if _, err := cl.Submit(ctx, OpRequest{Kind: "deposit", Account: 1, Amount: 1, UserRef: 9}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("read_only token on a submit: %v", err)
	}
	cl.Token = rw
	if r, err := cl.Submit(ctx, OpRequest{Kind: "deposit", Account: 1, Amount: 1, UserRef: 9}); err != nil || r.Fail != "ok" {
		t.Errorf("read_write token: %+v %v", r, err)
	}
}
