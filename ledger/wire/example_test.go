package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// A client encodes a request frame; the server reads it with a
// FrameReader, decodes the body and answers with the response type.
func Example() {
	enc := wire.NewEncoder()
	enc.SubmitWait(7, ledger.Committed, ledger.Transfer{From: 1, To: 2, Amount: 30})
	// length 17, type 0x03, id 7, then the msgpack body
	// [level 3, [kind 3 (transfer), from, to, amount, user ref]]
	fmt.Printf("frame: % x\n", enc.Bytes())

	fr := wire.NewFrameReader(bytes.NewReader(enc.Bytes()), 0)
	h, body, err := fr.Next()
	if err != nil {
		log.Fatal(err)
	}
	var req wire.Request
	if err := wire.NewDecoder().Request(h.Type, body, &req); err != nil {
		log.Fatal(err)
	}
	fmt.Println("type:", h.Type, "id:", h.ID, "level:", req.Level)
	fmt.Printf("op: %+v\n", req.Op)

	// A body that is not what its type says is an error, never a guess:
	// here submit_wait's body [level] lacks its op.
	enc.Reset()
	enc.Raw(wire.TypeSubmitWait, 8, []byte{0x91, 0x03})
	h, body, _ = wire.NewFrameReader(bytes.NewReader(enc.Bytes()), 0).Next()
	err = wire.NewDecoder().Request(h.Type, body, &req)
	fmt.Println(errors.Is(err, wire.ErrMalformed), err)
	// Output:
	// frame: 00 00 00 11 03 00 00 00 00 00 00 00 07 92 03 95 03 01 02 1e 00
	// type: submit_wait id: 7 level: committed
	// op: {From:1 To:2 Amount:30 UserRef:0 Ledger:0 Code:0 Flags:0 UserData:0 PendingID:0 Timeout:0 Linked:false}
	// true wire: malformed message: body has 1 fields, want 2
}
