// Package client is the Go client of the lanework ledger server.
//
// A Client holds a small pool of TCP connections; each carries many
// requests at once (pipelining), matched to their answers by request id.
// Every call takes a context: when it ends, the call returns its error at
// once (the server still executes a submit it already received).
//
// WithToken authenticates every connection with a bearer token (a hello
// frame sent once, right after connecting) and WithTLS speaks TLS,
// verifying the server's certificate.
//
// # Delivery: at most once
//
// A connection that breaks is replaced on the next call, but the requests
// that were in flight on it are never sent again: they fail with an error
// matching ErrConnLost, and a submit among them may or may not have been
// executed. The client never executes an operation twice on its own. To
// retry safely, give each operation a non-zero UserRef: a retried operation
// whose original did execute then fails with ledger.Duplicate (naming the
// original transaction) instead of executing again, which makes
// retry-until-answered exactly once within the ledger's dedup window.
//
// # Errors
//
// Errors reported by the server mirror the ledger's: errors.Is matches the
// ledger's sentinels (ledger.ErrAccountRange, ledger.ErrNotFound,
// ledger.ErrClosed, ...), input errors are *ledger.InputError (with the
// op's index in a batch), and the rest are *wire.Error carrying the wire
// error code.
package client
