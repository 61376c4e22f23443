package ledgercluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/lanework/lanework/ledger/server"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// transport carries raft messages between replicas over TCP: one outgoing
// connection per peer, written by one goroutine that drains everything
// queued for the peer into a single buffered write (messages batched per
// peer), and one reader goroutine per incoming connection. Raft tolerates
// loss, so a full queue or a broken connection drops messages (and tells
// raft the peer is unreachable) instead of blocking the Ready loop.
//
// A connection opens with a hello: [u64 cluster id][u64 sender id][u8
// kind][u8 token length][token]; a different cluster id, or with a peer
// token configured a different token, closes it. With TLS every
// connection is a TLS connection first. A message connection (kind 0)
// then carries frames: [u32 length][Message]. A snapshot connection (kind
// 1) carries one MsgSnap frame and its checkpoint (snapstream.go).
//
// The receiver of a message connection writes nothing back, but for one
// answer: removedAnswer, to a replica it has applied the removal of. A
// removed replica may miss the entry that removes it (the leader stops
// sending to it once it applies the change), and without the answer it
// would run on, outside the configuration, for ever.
type transport struct {
	clusterID, self uint64
	ln              net.Listener
	// Security: the hello's token (sent; required if peerAuth is set),
	// and TLS for dialing (the listener is wrapped at construction).
	token       []byte
	peerAuth    *server.Authenticator
	dialTLS     *tls.Config
	peers       map[uint64]*peer
	step        func(*pb.Message)
	unreachable func(id uint64)
	// snapshot receives a MsgSnap and its checkpoint stream; nil refuses
	// snapshot connections.
	snapshot func(m *pb.Message, body io.Reader) error
	// isRemoved reports whether this replica applied replica id's
	// removal; removed is called when a peer answers that it applied
	// this replica's.
	isRemoved func(id uint64) bool
	removed   func()
	log       *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

const (
	peerQueue = 4096
	maxFrame  = 64 << 20
	helloLen  = 17

	connMessages = 0
	connSnapshot = 1

	removedAnswer = 'R'
)

type peer struct {
	id   uint64
	addr string
	q    chan []byte   // marshaled messages
	stop chan struct{} // closed when the peer leaves the address book
}

func newTransport(cfg *Config, peers map[uint64]string, step func(*pb.Message), unreachable func(uint64),
	snapshot func(*pb.Message, io.Reader) error, isRemoved func(uint64) bool, removed func(), log *slog.Logger) (*transport, error) {
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Peers[cfg.NodeID]); err != nil {
			return nil, fmt.Errorf("ledgercluster: raft listen: %w", err)
		}
	}
	var auth *server.Authenticator
	if cfg.PeerToken != "" {
		var err error
		if auth, err = server.NewAuthenticator([]server.Token{{Secret: cfg.PeerToken, Scope: server.ReadWrite}}); err != nil {
			ln.Close()
			return nil, fmt.Errorf("%w: peer token: %w", ErrConfig, err)
		}
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	t := &transport{clusterID: cfg.ClusterID, self: cfg.NodeID, ln: ln, token: []byte(cfg.PeerToken), peerAuth: auth, dialTLS: cfg.PeerTLS,
		peers: make(map[uint64]*peer), step: step,
		unreachable: unreachable, snapshot: snapshot, isRemoved: isRemoved, removed: removed, log: log, conns: make(map[net.Conn]struct{}), done: make(chan struct{})}
	t.setPeers(peers)
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// setPeers makes peers (ids to raft addresses) the replicas messages go
// to: a new one gets its sender, one gone or moved loses it.
func (t *transport) setPeers(peers map[uint64]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	for id, p := range t.peers {
		if peers[id] != p.addr {
			close(p.stop)
			delete(t.peers, id)
		}
	}
	for id, addr := range peers {
		if id == t.self || t.peers[id] != nil {
			continue
		}
		p := &peer{id: id, addr: addr, q: make(chan []byte, peerQueue), stop: make(chan struct{})}
		t.peers[id] = p
		t.wg.Add(1)
		go t.runPeer(p)
	}
}

// send queues m for its peer; it never blocks. Called from the Ready loop
// only, which is where raft allows marshaling.
func (t *transport) send(m *pb.Message) {
	t.mu.Lock()
	p := t.peers[m.GetTo()]
	t.mu.Unlock()
	if p == nil {
		return
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.log.Error("marshal raft message", "err", err)
		return
	}
	select {
	case p.q <- b:
	default:
		t.unreachable(p.id)
	}
}

func (t *transport) track(c net.Conn, add bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if add {
		if t.closed {
			return false
		}
		t.conns[c] = struct{}{}
	} else {
		delete(t.conns, c)
	}
	return true
}

func (t *transport) runPeer(p *peer) {
	defer t.wg.Done()
	var c net.Conn
	var w *bufio.Writer
	drop := func() {
		if c != nil {
			c.Close()
			t.track(c, false)
			c = nil
		}
	}
	defer drop()
	for {
		var b []byte
		select {
		case <-t.done:
			return
		case <-p.stop:
			return
		case b = <-p.q:
		}
		if c == nil {
			nc, err := t.dial(context.Background(), p.addr, 200*time.Millisecond)
			if err != nil {
				t.unreachable(p.id)
				t.drain(p) // stale messages; raft resends what matters
				select {
				case <-t.done:
					return
				case <-p.stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			if !t.track(nc, true) {
				nc.Close()
				return
			}
			c, w = nc, bufio.NewWriterSize(nc, 256<<10)
			w.Write(t.hello(connMessages))
			t.wg.Add(1)
			go t.watchAnswer(nc)
		}
		err := writeFrame(w, b)
		for more := true; more && err == nil; { // everything queued: one write
			select {
			case b = <-p.q:
				err = writeFrame(w, b)
			default:
				more = false
			}
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			drop()
			t.unreachable(p.id)
		}
	}
}

// dial connects to a peer, with TLS if configured (the handshake within
// timeout too).
// watchAnswer reads what the peer writes back on message connection c:
// nothing until c closes, unless the peer removed this replica.
func (t *transport) watchAnswer(c net.Conn) {
	defer t.wg.Done()
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err == nil && b[0] == removedAnswer {
		t.removed()
	}
}

func (t *transport) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if t.dialTLS == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	td := &tls.Dialer{NetDialer: d, Config: t.dialTLS}
	return td.DialContext(ctx, "tcp", addr)
}

func (t *transport) hello(kind byte) []byte {
	h := make([]byte, helloLen, helloLen+1+len(t.token))
	binary.LittleEndian.PutUint64(h[0:], t.clusterID)
	binary.LittleEndian.PutUint64(h[8:], t.self)
	h[16] = kind
	h = append(h, byte(len(t.token)))
	return append(h, t.token...)
}

func (t *transport) drain(p *peer) {
	for {
		select {
		case <-p.q:
		default:
			return
		}
	}
}

func writeFrame(w *bufio.Writer, b []byte) error {
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(b)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

func (t *transport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return // closed
		}
		if !t.track(c, true) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go t.serve(c)
	}
}

func (t *transport) serve(c net.Conn) {
	defer t.wg.Done()
	defer func() { c.Close(); t.track(c, false) }()
	r := bufio.NewReaderSize(c, 256<<10)
	c.SetReadDeadline(time.Now().Add(snapshotTimeout)) // the TLS handshake and the hello
	var hello [helloLen + 1]byte
	if _, err := io.ReadFull(r, hello[:]); err != nil {
		return
	}
	token := make([]byte, hello[helloLen])
	if _, err := io.ReadFull(r, token); err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	if id := binary.LittleEndian.Uint64(hello[0:]); id != t.clusterID {
		t.log.Warn("raft connection from another cluster refused", "remote", c.RemoteAddr(), "cluster_id", id)
		return
	}
	if t.peerAuth != nil && t.peerAuth.Check(token) != server.ReadWrite {
		t.log.Warn("raft connection without the peer token refused", "remote", c.RemoteAddr())
		return
	}
	if from := binary.LittleEndian.Uint64(hello[8:]); t.isRemoved(from) {
		t.log.Info("raft connection from a removed replica answered so", "id", from, "remote", c.RemoteAddr())
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write([]byte{removedAnswer})
		return
	}
	var buf []byte
	switch hello[16] {
	case connMessages:
		for {
			m, err := readMessage(r, &buf)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					t.log.Warn("raft message", "remote", c.RemoteAddr(), "err", err)
				}
				return
			}
			t.step(m)
		}
	case connSnapshot:
		if err := t.receiveSnapshot(c, r); err != nil {
			t.log.Warn("raft snapshot not received", "remote", c.RemoteAddr(), "err", err)
		}
	default:
		t.log.Warn("raft connection of unknown kind refused", "remote", c.RemoteAddr(), "kind", hello[16])
	}
}

// readMessage reads one frame, reusing *buf.
func readMessage(r io.Reader, buf *[]byte) (*pb.Message, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n > maxFrame {
		return nil, fmt.Errorf("%d-byte frame", n)
	}
	if cap(*buf) < int(n) {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	m := &pb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

func (t *transport) close() error {
	t.mu.Lock()
	t.closed = true
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	close(t.done)
	err := t.ln.Close()
	t.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
