package ledgercluster

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves the replica's gauges in the Prometheus format. The
// WAL hash is 64 bits, more than a float64 holds exactly, so it is two
// gauges of 32 bits each: replicas with equal pairs hold the same batches.
func metricsHandler(n *Node) http.Handler {
	reg := prometheus.NewRegistry()
	g := func(name, help string, f func(Status) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ledgercluster_" + name, Help: help},
			func() float64 { return f(n.Status()) }))
	}
	g("applied_tx", "Last transaction in this replica's ledger WAL.", func(s Status) float64 { return float64(s.Applied) })
	g("replicated_tx", "The Replicated index: last transaction durable on a quorum.", func(s Status) float64 { return float64(s.Replicated) })
	g("leader_id", "Raft's leader as this replica knows it (0: unknown).", func(s Status) float64 { return float64(s.Leader) })
	g("leading", "1 while this replica's ledger leads and takes submits.", func(s Status) float64 {
		if s.Leading {
			return 1
		}
		return 0
	})
	g("wal_hash_hi", "High 32 bits of the chain of the WAL's batch checksums.", func(s Status) float64 { return float64(s.hash >> 32) })
	g("wal_hash_lo", "Low 32 bits of the chain of the WAL's batch checksums.", func(s Status) float64 { return float64(s.hash & (1<<32 - 1)) })
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
