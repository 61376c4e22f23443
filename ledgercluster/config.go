package ledgercluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
)

// ErrConfig is wrapped by every refusal of a Config.
var ErrConfig = errors.New("ledgercluster: bad config")

// Config configures one replica.
type Config struct {
	// ClusterID names the cluster; replicas of another cluster are
	// refused on the raft transport, and a directory remembers it.
	ClusterID uint64
	// NodeID is this replica's raft id (non-zero, unique for all time).
	NodeID uint64
	// Peers maps every replica's id, this one's included, to its raft
	// address (host:port).
	Peers map[uint64]string
	// Listener, if set, is where raft messages come in (it must be
	// reachable at this replica's Peers address); else Start listens on
	// that address. Tests pass one to hold the port from the start.
	Listener net.Listener
	// ClientAddrs maps replica ids to the addresses clients reach them at;
	// a follower's *ledger.NotLeaderError names the leader's. Optional.
	ClientAddrs map[uint64]string
	// TCPAddrs maps replica ids to their ledger server's msgpack address
	// (server.NewReplica), which a not_leader answer there names.
	// Optional.
	TCPAddrs map[uint64]string
	// Join starts a new replica of a running cluster: it waits, outside
	// the configuration, until the leader adds it (AddReplica) and sends
	// it the log or a snapshot. Peers must name the cluster's replicas and
	// this one. Ignored once the directory holds a raft log.
	Join bool
	// Dir holds the replica: Dir/raft (the raft log) and Dir/ledger.
	Dir string
	// Ledger configures the ledger; its Dir and WALRetention are set by
	// the replica.
	Ledger ledger.Config
	// Tick is raft's tick; ElectionTicks ticks without a leader start an
	// election (raft randomizes it to [1, 2) times that). Defaults 10 ms
	// and 20: an election timeout of 200-400 ms.
	Tick          time.Duration
	ElectionTicks int
	// Logger receives raft's and the replica's log; default slog.Default.
	Logger *slog.Logger

	// Security, with the ledger server's tokens and TLS (ledger/server).
	// Tokens, if set, guard Handler: a GET needs a read_only or read_write
	// bearer token, anything else read_write.
	Tokens []server.Token
	// PeerToken, if set, is the secret every replica's raft connections
	// carry in their hello and require of incoming ones (at least
	// server.MinTokenLen bytes; the same on every replica).
	PeerToken string
	// TLS, if set, is the raft listener's TLS (Certificates; ClientCAs
	// and ClientAuth for mutual TLS); PeerTLS what this replica dials its
	// peers with (RootCAs to verify them, Certificates for mutual TLS).
	// Set both or neither.
	TLS, PeerTLS *tls.Config
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.ClusterID == 0:
		return c, fmt.Errorf("%w: cluster id must be non-zero", ErrConfig)
	case c.NodeID == 0:
		return c, fmt.Errorf("%w: node id must be non-zero", ErrConfig)
	case c.Peers[c.NodeID] == "":
		return c, fmt.Errorf("%w: peers name no address for node %d", ErrConfig, c.NodeID)
	case c.Dir == "":
		return c, fmt.Errorf("%w: dir is empty", ErrConfig)
	}
	for id, a := range c.Peers {
		if _, _, err := net.SplitHostPort(a); err != nil || id == 0 {
			return c, fmt.Errorf("%w: peer %d address %q: want id >= 1 and host:port", ErrConfig, id, a)
		}
	}
	if c.Tick == 0 {
		c.Tick = 10 * time.Millisecond
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 20
	}
	if c.ElectionTicks < 2 || c.Tick < 0 {
		return c, fmt.Errorf("%w: election ticks %d (>= 2), tick %v", ErrConfig, c.ElectionTicks, c.Tick)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if (c.TLS == nil) != (c.PeerTLS == nil) {
		return c, fmt.Errorf("%w: TLS and PeerTLS go together (a replica both accepts and dials)", ErrConfig)
	}
	if c.PeerToken != "" && (len(c.PeerToken) < server.MinTokenLen || len(c.PeerToken) > 255) {
		return c, fmt.Errorf("%w: peer token of %d bytes, want %d to 255", ErrConfig, len(c.PeerToken), server.MinTokenLen)
	}
	return c, nil
}

func (c Config) peerIDs() []uint64 {
	ids := make([]uint64, 0, len(c.Peers))
	for id := range c.Peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ParsePeers parses "1=host:port,2=host:port,...".
func ParsePeers(s string) (map[uint64]string, error) {
	m := make(map[uint64]string)
	for _, f := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(f), "=")
		n, err := strconv.ParseUint(id, 10, 64)
		if !ok || err != nil || n == 0 {
			return nil, fmt.Errorf("%w: peers: %q is not id=host:port with id >= 1", ErrConfig, f)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%w: peers: %q: %w", ErrConfig, f, err)
		}
		if _, dup := m[n]; dup {
			return nil, fmt.Errorf("%w: peers: id %d twice", ErrConfig, n)
		}
		m[n] = addr
	}
	return m, nil
}
