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
)

var levelNames = [...]string{"unknown", "sequenced", "computed", "committed", "snapshot"}

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
