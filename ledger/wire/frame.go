package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Type identifies a message. Request types are below 0x80 and response
// types at or above it. Every request is answered with TypeError or with
// the response type named beside it below, which is T|0x80 for every T
// except TypeResult: it shares TypeResultIs (0x83) with TypeSubmitWait.
type Type uint8

// Request types.
const (
	TypePing       Type = 0x01 // body []; answer TypePong
	TypeSubmit     Type = 0x02 // body [level, [op...]]; answer TypeSubmitted
	TypeSubmitWait Type = 0x03 // body [level, op]; answer TypeResultIs
	TypeWait       Type = 0x04 // body [id, level]; answer TypeWaited
	TypeBalance    Type = 0x05 // body [account]; answer TypeBalanceIs
	TypeStatus     Type = 0x06 // body [id]; answer TypeStatusIs
	TypeResult     Type = 0x07 // body [id]; answer TypeResultIs (0x83, not 0x87)
	TypeIndexes    Type = 0x08 // body []; answer TypeIndexesAre
	TypeSnapshot   Type = 0x09 // body []; answer TypeSnapshotTaken
	TypeHello      Type = 0x0A // body [token]; answer TypeWelcome. First frame on a server with tokens.
	TypeLookup     Type = 0x0B // body [account]; answer TypeAccountIs
)

// Response types.
const (
	TypePong               = TypePing | respBit       // body []
	TypeSubmitted          = TypeSubmit | respBit     // body [first, last]
	TypeResultIs           = TypeSubmitWait | respBit // body result (answers TypeSubmitWait and TypeResult)
	TypeWaited             = TypeWait | respBit       // body []
	TypeBalanceIs          = TypeBalance | respBit    // body [balance]
	TypeStatusIs           = TypeStatus | respBit     // body [level]
	TypeIndexesAre         = TypeIndexes | respBit    // body [sequenced, computed, committed, snapshot]
	TypeSnapshotTaken      = TypeSnapshot | respBit   // body [tx_id]
	TypeWelcome            = TypeHello | respBit      // body [scope]: "read_only" or "read_write"
	TypeAccountIs          = TypeLookup | respBit     // body account (see Encoder.AccountIs)
	TypeError         Type = 0xFF                     // body [code, index, message]
)

const respBit Type = 0x80

// IsRequest reports whether t is a request type this version knows.
func (t Type) IsRequest() bool { return t >= TypePing && t <= TypeLookup || isReadType(t) }

var typeNames = map[Type]string{
	TypePing: "ping", TypeSubmit: "submit", TypeSubmitWait: "submit_wait", TypeWait: "wait",
	TypeBalance: "balance", TypeStatus: "status", TypeResult: "result", TypeIndexes: "indexes",
	TypeSnapshot: "snapshot", TypeHello: "hello", TypeLookup: "lookup", TypeAccountIs: "account_is",
	TypePong: "pong", TypeSubmitted: "submitted", TypeResultIs: "result_is", TypeWaited: "waited",
	TypeBalanceIs: "balance_is", TypeStatusIs: "status_is", TypeIndexesAre: "indexes_are",
	TypeSnapshotTaken: "snapshot_taken", TypeWelcome: "welcome",
	TypeError: "error",
}

// String returns the type's protocol name, or "type(0xNN)".
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(0x%02x)", uint8(t))
}

// Frame layout and limits.
const (
	// LenSize is the size of the length prefix.
	LenSize = 4
	// HeaderSize is the type and request id that start every frame
	// (counted in the length).
	HeaderSize = 9
	// MinFrame is the smallest valid length: a header with an empty body.
	MinFrame = HeaderSize
	// DefaultMaxFrame is the default bound on a frame's length, 4 MiB.
	DefaultMaxFrame = 4 << 20
	// MaxOps bounds the ops of one TypeSubmit body.
	MaxOps = 1 << 16
	// MaxMessage bounds the message of an error body, in bytes.
	MaxMessage = 1 << 10
	// MaxToken bounds the token of a hello, in bytes.
	MaxToken = 256
)

// Frame errors.
var (
	// ErrFrameTooLarge: a frame's length is above the receiver's limit.
	ErrFrameTooLarge = errors.New("wire: frame too large")
	// ErrFrameTooShort: a frame's length is below MinFrame.
	ErrFrameTooShort = errors.New("wire: frame too short")
)

// Header is the fixed start of a frame.
type Header struct {
	Type Type
	ID   uint64 // request id, chosen by the client; echoed in the response
}

// FrameReader reads frames from a stream. A body of up to SmallFrame bytes
// is read into a buffer the reader keeps; a larger one into a buffer lent
// by Buffers (default: a shared, unlimited FrameBuffers), which Release or
// the next call to Next gives back. The body returned by Next is valid
// until then.
type FrameReader struct {
	r     io.Reader
	max   int
	small []byte // allocated on the first non-empty body
	big   []byte // lent by Buffers; nil if none

	// Buffers lends the buffers of bodies above SmallFrame; nil selects a
	// shared one without a budget. Set it before the first Next.
	Buffers *FrameBuffers
	// Cancel, if non-nil, ends a wait for Buffers' budget when closed:
	// Next then returns ErrCanceled.
	Cancel <-chan struct{}
}

// NewFrameReader returns a reader of frames of length at most max (<= 0
// means DefaultMaxFrame). r should be buffered.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &FrameReader{r: r, max: max}
}

// Release gives back the buffer of the last body if it was lent; the body
// must not be used after. Idle connections call it so as to hold only
// SmallFrame bytes.
func (fr *FrameReader) Release() {
	if fr.big != nil {
		fb := fr.Buffers
		if fb == nil {
			fb = defaultBuffers
		}
		fb.put(fr.big)
		fr.big = nil
	}
}

// Next reads one frame. A length above the limit returns the frame's header
// (read after the length) and an error wrapping ErrFrameTooLarge, without
// reading the body: the stream is then out of sync and must be closed. A
// length below MinFrame returns ErrFrameTooShort. A stream that ends inside
// a frame returns io.ErrUnexpectedEOF; one that ends between frames, io.EOF.
func (fr *FrameReader) Next() (Header, []byte, error) {
	fr.Release()
	var lenb [LenSize + HeaderSize]byte
	if _, err := io.ReadFull(fr.r, lenb[:LenSize]); err != nil {
		return Header{}, nil, err
	}
	n := binary.BigEndian.Uint32(lenb[:LenSize])
	if n < MinFrame {
		return Header{}, nil, fmt.Errorf("%w: length %d", ErrFrameTooShort, n)
	}
	if _, err := io.ReadFull(fr.r, lenb[LenSize:]); err != nil {
		return Header{}, nil, eofInside(err)
	}
	h := Header{Type: Type(lenb[LenSize]), ID: binary.BigEndian.Uint64(lenb[LenSize+1:])}
	if uint64(n) > uint64(fr.max) {
		return h, nil, fmt.Errorf("%w: length %d above %d", ErrFrameTooLarge, n, fr.max)
	}
	body := int(n) - HeaderSize
	var buf []byte
	switch {
	case body == 0:
	case body <= SmallFrame:
		if fr.small == nil {
			fr.small = make([]byte, SmallFrame)
		}
		buf = fr.small[:body]
	default:
		fb := fr.Buffers
		if fb == nil {
			fb = defaultBuffers
		}
		var err error
		if buf, err = fb.get(body, fr.Cancel); err != nil {
			return h, nil, err
		}
		fr.big = buf
	}
	if _, err := io.ReadFull(fr.r, buf); err != nil {
		return h, nil, eofInside(err)
	}
	return h, buf, nil
}

func eofInside(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
