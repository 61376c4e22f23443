// Package ledgercluster replicates a lanework ledger on go.etcd.io/raft/v3.
//
// Each replica is a Node: a raft.Node driven by one Ready loop, a durable
// raft log (raft's MemoryStorage in front of an append-only file), a TCP
// transport batched per peer, and the replica's ledger. The leader's ledger
// (ledger.OpenReplicated) hands every WAL group commit to the Node, which
// proposes it as one raft entry and returns once raft commits it; only then
// does the leader write the batch to its own WAL. Followers
// (ledger.OpenFollower) apply the committed batches with ledger.Apply, the
// replay path of the ledger's recovery, so every replica holds the same WAL
// byte for byte. Pre-vote and check-quorum are on; a replica that stops
// leading fails its pending proposals at once and reopens its ledger as a
// follower, so it never acknowledges again.
//
// A replica behind the leader's compacted raft log catches up through
// raft's snapshot, which carries a checkpoint of the leader's ledger
// (ledger.WriteCheckpoint); replicas are added and removed at runtime by
// raft configuration changes (AddReplica, RemoveReplica); the raft
// transport and the client API take the ledger server's tokens and TLS.
//
// Handler serves a replica's HTTP/JSON API, and ledger/server.NewReplica
// its msgpack protocol; `ledger serve --cluster-id` runs one replica and
// `ledger cluster demo` three. See
// docs/ledger-cluster.md for the design, the failure table and the
// measured numbers.
package ledgercluster
