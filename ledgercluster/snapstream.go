package ledgercluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// A raft snapshot travels on a connection of its own, so that a large
// ledger checkpoint never holds up the peer's message stream: after the
// hello, one frame holding the MsgSnap (its snapshot's metadata; the data
// is the sender's address book), then the checkpoint in chunks [u32
// length][bytes], a zero length, and the CRC32C of every chunk's bytes.
// The receiver answers one byte once the checkpoint is durable on its
// disk and the MsgSnap stepped: 1 taken, 0 refused.

// snapshotTimeout bounds a snapshot connection without progress.
const snapshotTimeout = 30 * time.Second

// chunkWriter frames what is written to it as chunks.
type chunkWriter struct {
	w   *bufio.Writer
	c   net.Conn
	crc uint32
}

func (cw *chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	cw.c.SetWriteDeadline(time.Now().Add(snapshotTimeout))
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(p)))
	if _, err := cw.w.Write(h[:]); err != nil {
		return 0, err
	}
	cw.crc = crc32.Update(cw.crc, crcTable, p)
	return cw.w.Write(p)
}

// sendSnapshot sends msg (a marshaled MsgSnap) to peer to, with the body
// write produces, and returns once the peer has it durably.
func (t *transport) sendSnapshot(ctx context.Context, to uint64, msg []byte, write func(io.Writer) error) error {
	t.mu.Lock()
	p := t.peers[to]
	t.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no address for replica %d", to)
	}
	c, err := t.dial(ctx, p.addr, time.Second)
	if err != nil {
		return err
	}
	if !t.track(c, true) {
		c.Close()
		return net.ErrClosed
	}
	defer func() { c.Close(); t.track(c, false) }()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	w := bufio.NewWriterSize(c, 1<<20)
	w.Write(t.hello(connSnapshot))
	if err := writeFrame(w, msg); err != nil {
		return err
	}
	cw := &chunkWriter{w: w, c: c}
	if err := write(cw); err != nil {
		return err
	}
	var end [8]byte
	binary.LittleEndian.PutUint32(end[4:], cw.crc)
	if _, err := w.Write(end[:]); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(snapshotTimeout))
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	if ack[0] != 1 {
		return errors.New("the replica refused it")
	}
	return nil
}

// chunkReader reads the chunks back; it returns io.EOF only after the
// end and a matching checksum.
type chunkReader struct {
	r    *bufio.Reader
	c    net.Conn
	left uint32
	crc  uint32
	done bool
}

func (cr *chunkReader) Read(p []byte) (int, error) {
	if cr.done {
		return 0, io.EOF
	}
	cr.c.SetReadDeadline(time.Now().Add(snapshotTimeout))
	if cr.left == 0 {
		var h [4]byte
		if _, err := io.ReadFull(cr.r, h[:]); err != nil {
			return 0, noEOF(err)
		}
		if cr.left = binary.LittleEndian.Uint32(h[:]); cr.left == 0 {
			if _, err := io.ReadFull(cr.r, h[:]); err != nil {
				return 0, noEOF(err)
			}
			if binary.LittleEndian.Uint32(h[:]) != cr.crc {
				return 0, errors.New("snapshot stream checksum")
			}
			cr.done = true
			return 0, io.EOF
		}
	}
	n, err := cr.r.Read(p[:min(len(p), int(cr.left))])
	cr.left -= uint32(n)
	cr.crc = crc32.Update(cr.crc, crcTable, p[:n])
	return n, noEOF(err)
}

// noEOF turns an end of stream before the end chunk into an error.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (t *transport) receiveSnapshot(c net.Conn, r *bufio.Reader) error {
	if t.snapshot == nil {
		return errors.New("snapshots are not taken here")
	}
	c.SetReadDeadline(time.Now().Add(snapshotTimeout))
	var buf []byte
	m, err := readMessage(r, &buf)
	if err != nil {
		return err
	}
	if m.GetType() != pb.MsgSnap {
		return fmt.Errorf("a %v on a snapshot connection", m.GetType())
	}
	err = t.snapshot(m, &chunkReader{r: r, c: c})
	ack := []byte{1}
	if err != nil {
		ack[0] = 0
	}
	c.SetWriteDeadline(time.Now().Add(snapshotTimeout))
	_, werr := c.Write(ack)
	return errors.Join(err, werr)
}
