package chronon

import "log/slog"

// Unlimited, passed to Capacity or Rate, removes that limit.
const Unlimited = 0

// Option configures a connection made by Connect.
type Option func(*connConfig)

type connConfig struct {
	delay    int
	capacity int
	rate     int
	src      string // "file:line" of a YAML declaration, for errors
}

func defaultConfig() connConfig { return connConfig{delay: 1, capacity: Unlimited, rate: 1} }

// Delay sets the registered delay in cycles: a message sent in cycle c
// arrives in cycle c+n. The default is 1. Delay(0) delivers in the same cycle
// and is allowed only on acyclic paths.
func Delay(n int) Option { return func(c *connConfig) { c.delay = n } }

// Capacity sets the architectural buffer depth of the connection: the most
// messages sent and not yet consumed (credited from the cycle after
// consumption). The default is Unlimited, which disables admission control;
// such an edge still has bounded physical storage (UnboundedDepth) whose
// overflow fails the run.
func Capacity(n int) Option { return func(c *connConfig) { c.capacity = n } }

// Rate sets the wire bandwidth: the most messages the connection accepts per
// producer cycle. The default is 1; Unlimited removes the limit.
func Rate(n int) Option { return func(c *connConfig) { c.rate = n } }

// MaxDelay and MaxRate bound Delay and Rate: a connection keeps both in 32
// bits, and no model needs a wire of 16 million cycles, or a rate beyond any
// lane's depth.
const (
	MaxDelay = 1 << 24
	MaxRate  = 1 << 24
)

// UnboundedDepth is the physical lane depth of a connection without a
// capacity. Exceeding it is reported as ErrOverflow.
const UnboundedDepth = 4096

func (c connConfig) validate() error {
	switch {
	case c.delay < 0:
		return topoErr("delay %d is negative", c.delay)
	case c.capacity < 0:
		return topoErr("capacity %d is negative (use 0 for unlimited)", c.capacity)
	case c.rate < 0:
		return topoErr("rate %d is negative (use 0 for unlimited)", c.rate)
	case c.capacity > 1<<24:
		return topoErr("capacity %d exceeds %d", c.capacity, 1<<24)
	case c.delay > MaxDelay:
		return topoErr("delay %d exceeds %d", c.delay, MaxDelay)
	case c.rate > MaxRate:
		return topoErr("rate %d exceeds %d (use 0 for unlimited)", c.rate, MaxRate)
	}
	return nil
}

// SimOption configures a Simulation made by New.
type SimOption func(*simConfig)

type simConfig struct {
	broadcast bool
	lookahead int          // see WithMaxLookahead
	logger    *slog.Logger // see WithLogger
	logFilter LogFilter
}

func defaultSimConfig() simConfig { return simConfig{broadcast: true} }

// WithBroadcast switches the shared broadcast transport on (the default) or
// off. When on, Build gives every OutPort with BroadcastFanout or more
// connections, all of delay 1 and without capacity, one payload ring
// written once per Send, with a cache-line-aligned read cursor per
// destination, instead of one lane per connection. Results are identical
// either way, sequentially and in parallel; only memory use and speed
// differ.
func WithBroadcast(on bool) SimOption { return func(c *simConfig) { c.broadcast = on } }
