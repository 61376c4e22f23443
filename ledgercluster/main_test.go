package ledgercluster

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the replica process of the process tests when the test
// binary is started as one (replicaEnv set), the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		os.Exit(replicaMain())
	}
	goleak.VerifyTestMain(m)
}
