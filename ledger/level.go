package ledger

// Level is how far a transaction has progressed through the pipeline. Each
// level implies the ones below it.
type Level uint8

// Levels, in pipeline order. Status returns Unknown for an id not yet
// sequenced; Wait and SubmitAndWait accept Computed, Committed and Snapshot.
const (
	Unknown   Level = iota
	Sequenced       // has an id; the Transactor will execute it
	Computed        // executed; its outcome is final but not yet durable
	Committed       // durable in the WAL
	Snapshot        // applied to the readable balances
	// Replicated: durable on a quorum of a cluster's replicas
	// (replicate.go). On a leader it comes before Committed (the leader
	// writes its own WAL after the quorum holds the batch); on a single
	// node it is Committed. It sorts last only to keep the wire values of
	// the levels above; Status never reports it.
	Replicated
)

var levelNames = [...]string{"unknown", "sequenced", "computed", "committed", "snapshot", "replicated"}

// waitable reports whether Wait, SubmitFunc and SubmitAndWait accept l.
func (l Level) waitable() bool { return l >= Computed && l <= Replicated }

// String returns the level's lower-case name.
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return "invalid"
}

// Indexes are the pipeline's monotonic progress marks: every transaction
// with an id at or below an index has reached that level. Always
// Snapshot <= Committed <= Computed <= Sequenced.
type Indexes struct {
	Sequenced TxID
	Computed  TxID
	Committed TxID
	Snapshot  TxID
}

// levelOf derives a transaction's status from the indexes.
func (x Indexes) levelOf(id TxID) Level {
	switch {
	case id == 0 || id > x.Sequenced:
		return Unknown
	case id <= x.Snapshot:
		return Snapshot
	case id <= x.Committed:
		return Committed
	case id <= x.Computed:
		return Computed
	default:
		return Sequenced
	}
}
