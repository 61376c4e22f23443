// Package wire is the binary protocol of the lanework ledger server: frames,
// message types, body encodings, error codes and limits. The server and the
// Go client both speak it through this package; docs/ledger-protocol.md
// specifies it for other languages.
//
// A frame is a 4-byte big-endian length N followed by N bytes: a 1-byte
// message type, an 8-byte big-endian request id and a msgpack body. Every
// body is one msgpack array whose elements are positional fields. A response
// carries the id of its request and the request's type with the high bit set
// (TypeResult, which shares TypeResultIs with TypeSubmitWait, excepted), or
// TypeError. Requests on one connection may be pipelined: a client sends
// many before reading, and responses may arrive in any order.
//
// Requests are decoded strictly, under one op rule shared with the server's
// JSON API (see oprule.go): exactly the fields of each type, each of its
// msgpack type and range; nothing is cast or defaulted.
package wire
