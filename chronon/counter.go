package chronon

// Counter is a per-unit event counter. Declare it as a field of a unit
// struct (like a port); Simulation.Add finds it by reflection and names it
// after the field. Incrementing is a plain add on memory the unit owns, so it
// costs the same whether or not counters are being dumped. A Counter is
// owned by its unit: only that unit's Tick may change it.
type Counter struct {
	n uint64
}

// Add adds d to the counter.
func (c *Counter) Add(d uint64) { c.n += d }

// Inc adds one to the counter.
func (c *Counter) Inc() { c.n++ }

// Value returns the counter's total since the start of the run.
func (c *Counter) Value() uint64 { return c.n }

type namedCtr struct {
	name string
	c    *Counter
}
