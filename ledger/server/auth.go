package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Scope is what a token grants.
type Scope uint8

// Scopes. The zero value grants nothing.
const (
	// ReadOnly: balances, transactions, indexes, status, waits, metrics.
	ReadOnly Scope = iota + 1
	// ReadWrite: everything, including submitting ops and requesting
	// snapshots.
	ReadWrite
)

// String returns the scope's snake_case name, as the token file, the
// hello answer and the logs spell it.
func (s Scope) String() string {
	switch s {
	case ReadOnly:
		return "read_only"
	case ReadWrite:
		return "read_write"
	}
	return "none"
}

// Token is one bearer token the server accepts.
type Token struct {
	Secret string
	Scope  Scope
}

// MinTokenLen is the shortest secret accepted: 16 bytes, e.g. 22
// characters of base64 from a random source.
const MinTokenLen = 16

// ErrTokenFile is wrapped by the errors of ReadTokens.
var ErrTokenFile = errors.New("server: bad token file")

// ReadTokens parses a token file: one token a line, as "read_write SECRET"
// or "read_only SECRET" (a line with the secret alone is read_write).
// Blank lines and lines starting with # are skipped. Secrets are at least
// MinTokenLen and at most wire.MaxToken bytes, without spaces; errors name
// the line, never the secret.
func ReadTokens(r io.Reader) ([]Token, error) {
	var out []Token
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		t := Token{Scope: ReadWrite}
		switch {
		case len(f) == 1:
			t.Secret = f[0]
		case len(f) == 2 && f[0] == "read_write":
			t.Secret = f[1]
		case len(f) == 2 && f[0] == "read_only":
			t.Secret, t.Scope = f[1], ReadOnly
		default:
			return nil, fmt.Errorf("%w: line %d: want \"read_write SECRET\" or \"read_only SECRET\"", ErrTokenFile, n)
		}
		if err := checkSecret(t.Secret); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrTokenFile, n, err)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrTokenFile)
	}
	return out, nil
}

// ReadTokenFile reads the token file at path (see ReadTokens).
func ReadTokenFile(path string) ([]Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	defer f.Close()
	toks, err := ReadTokens(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return toks, nil
}

func checkSecret(s string) error {
	if len(s) < MinTokenLen || len(s) > 256 {
		return fmt.Errorf("secret of %d bytes, want %d to 256", len(s), MinTokenLen)
	}
	return nil
}

// Authenticator checks bearer tokens; the ledger server and ledgercluster's
// replica API use it. It keeps SHA-256 digests, compared in constant time
// against every token, so neither a secret's bytes nor its length nor
// which token matched shows in the time taken.
type Authenticator struct {
	digests [][sha256.Size]byte
	scopes  []Scope
}

// NewAuthenticator returns an Authenticator of toks; nil (no checks) for
// none. Errors wrap ErrConfig.
func NewAuthenticator(toks []Token) (*Authenticator, error) {
	if len(toks) == 0 {
		return nil, nil
	}
	a := &Authenticator{}
	for i, t := range toks {
		if err := checkSecret(t.Secret); err != nil {
			return nil, fmt.Errorf("%w: token %d: %w", ErrConfig, i, err)
		}
		if t.Scope != ReadOnly && t.Scope != ReadWrite {
			return nil, fmt.Errorf("%w: token %d: scope %d", ErrConfig, i, t.Scope)
		}
		a.digests = append(a.digests, sha256.Sum256([]byte(t.Secret)))
		a.scopes = append(a.scopes, t.Scope)
	}
	return a, nil
}

// Check returns the scope secret grants; 0 if none.
func (a *Authenticator) Check(secret []byte) Scope {
	d := sha256.Sum256(secret)
	var got Scope
	for i := range a.digests {
		if subtle.ConstantTimeCompare(d[:], a.digests[i][:]) == 1 {
			got = a.scopes[i] // no early exit: every token is compared
		}
	}
	return got
}

// AuthorizeHTTP checks r's bearer token (the Authorization header) for
// need and returns "" if it grants it, else why not: "missing", "invalid"
// or "forbidden" (a read_only token where read_write is needed).
func (a *Authenticator) AuthorizeHTTP(r *http.Request, need Scope) string {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch scope := a.Check([]byte(secret)); {
	case !ok || secret == "":
		return authMissing
	case scope == 0:
		return authInvalid
	case scope < need:
		return authForbidden
	}
	return ""
}

// Why an authentication failed, as metric labels and log values spell it.
const (
	authMissing   = "missing"   // no token (HTTP header or TCP hello)
	authInvalid   = "invalid"   // a token that matches none
	authForbidden = "forbidden" // a read_only token on a write
)
