// Package server serves one ledger.Ledger over the network: the binary
// protocol of package wire on a TCP listener, and an HTTP/JSON API (with
// Prometheus metrics) on a second one.
//
// Each TCP connection has a reader goroutine, which decodes frames and
// answers quick requests inline, and a writer goroutine, which encodes
// responses and writes them in batches. Requests that wait for a pipeline
// level run on reused worker goroutines, so a connection may have many requests
// in flight (up to Config.MaxInFlight; the reader stops reading beyond
// that). A client that does not read its responses stalls only its own
// connection, which is closed once a write blocks for Config.WriteTimeout
// or, on Linux, once written responses stay unacknowledged that long.
//
// Config.Tokens (bearer tokens, read_only or read_write) and Config.TLS
// protect both listeners; New refuses a non-loopback address without both
// unless Config.Insecure. A connection keeps a 4 KiB frame buffer; larger
// frames borrow from a pool bounded by Config.MaxFrameMemory. Metrics are
// served by prometheus/client_golang.
//
// Shutdown stops accepting, stops reading new requests, answers every
// request already read, and closes the connections; the caller then closes
// the ledger.
package server
