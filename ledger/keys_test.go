package ledger

import "testing"

// TestKeyPrefixesDistinct: every kind of pebble key has a prefix byte of its
// own. Two sharing one (the replica hash chain and the history index once
// did) would let one's range deletions remove the other's keys.
func TestKeyPrefixesDistinct(t *testing.T) {
	prefixes := map[string]byte{
		"meta": prefixMeta, "account": prefixAccount, "newest": prefixNewest, "oldest": prefixOldest,
		"hash": prefixHash, "wal": prefixWAL, "snapshot": prefixSnapshot, "chunk": prefixChunk,
		"dedup": prefixDedup, "dedup from": prefixDedupFrom, "truncation": prefixTruncation,
		"block": prefixBlock, "block before": prefixBlockBefore, "block time": prefixBlockTime, "transfer posting": prefixTxPosting,
		"history": prefixHistory, "account posting": prefixAcctPosting, "index state": prefixIndexState,
	}
	seen := map[byte]string{}
	for name, p := range prefixes {
		if other, ok := seen[p]; ok {
			t.Errorf("prefix %q of %s is also %s's", p, name, other)
		}
		seen[p] = name
	}
}
