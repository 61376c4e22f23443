package ledgercluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Client submits to a cluster through the replicas' HTTP API (Handler),
// following not_leader answers to the leader they name and retrying an
// op whose outcome is unknown (a replica unreachable, or one that stopped
// leading mid-request) on the next replica, with the same user_ref: the
// leader's idempotency index makes the retry exactly-once. Methods are not
// safe for concurrent use; use one Client per goroutine.
type Client struct {
	addrs []string
	hc    *http.Client
	at    int
	// Backoff is the pause before asking the next replica after one failed
	// to answer; default 10 ms.
	Backoff time.Duration
	// Token, if set, is sent as a bearer token.
	Token  string
	scheme string
}

// NewTLSClient is NewClient over HTTPS with tc (RootCAs to verify the
// replicas; Certificates for mutual TLS).
func NewTLSClient(tc *tls.Config, addrs ...string) *Client {
	c := NewClient(addrs...)
	c.hc.Transport = &http.Transport{TLSClientConfig: tc}
	c.scheme = "https://"
	return c
}

// ErrNoRef refuses a Submit without a user_ref: its outcome could not be
// retried safely after a failover.
var ErrNoRef = errors.New("ledgercluster: an op needs a user_ref to be retried")

// NewClient returns a client of the replicas at addrs (host:port of each
// --http-addr).
func NewClient(addrs ...string) *Client {
	return &Client{addrs: addrs, hc: &http.Client{Timeout: 5 * time.Second}, Backoff: 10 * time.Millisecond, scheme: "http://"}
}

// Submit sends req until a leader answers it or ctx ends. A 400 (bad
// input) ends it at once with the replica's message.
func (c *Client) Submit(ctx context.Context, req OpRequest) (OpResponse, error) {
	if req.UserRef == 0 {
		return OpResponse{}, ErrNoRef
	}
	if len(c.addrs) == 0 {
		return OpResponse{}, errors.New("ledgercluster: client has no replica addresses")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return OpResponse{}, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return OpResponse{}, err
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.scheme+c.addrs[c.at]+"/v1/ops", bytes.NewReader(body))
		if err != nil {
			return OpResponse{}, err
		}
		hr.Header.Set("Content-Type", "application/json")
		if c.Token != "" {
			hr.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := c.hc.Do(hr)
		if err != nil {
			c.next(ctx)
			continue
		}
		var r OpResponse
		derr := json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		switch {
		case derr != nil:
			c.next(ctx)
		case resp.StatusCode == http.StatusOK:
			return r, nil
		case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return r, fmt.Errorf("ledgercluster: %d %s", resp.StatusCode, r.Error)
		case resp.StatusCode == http.StatusMisdirectedRequest && r.Leader != "" && r.Leader != c.addrs[c.at]:
			c.follow(ctx, r.Leader)
		default: // 421 without a leader (an election), 503 (changing role): ask again
			c.next(ctx)
		}
	}
}

func (c *Client) follow(ctx context.Context, addr string) {
	for i, a := range c.addrs {
		if a == addr {
			c.at = i
			return
		}
	}
	c.next(ctx)
}

func (c *Client) next(ctx context.Context) {
	c.at = (c.at + 1) % len(c.addrs)
	t := time.NewTimer(c.Backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }
