package ledger

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// scanLedgerWAL reads the WAL of an open ledger from transaction from on.
func scanLedgerWAL(l *Ledger, from uint64, fn func(*walTx) error) error {
	_, err := scanWAL(&l.cfg, from, fn)
	return err
}
