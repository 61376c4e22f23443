package chronon_test

import (
	"log/slog"
	"os"

	"github.com/lanework/lanework/chronon"
)

// Cache logs its misses; hits only at debug level.
type Cache struct {
	chronon.Base
}

func (c *Cache) Tick() {
	if c.Cycle()%3 == 0 {
		c.Log(slog.LevelWarn, "miss", "cache miss", "addr", c.Cycle()*64)
	} else {
		c.Log(slog.LevelDebug, "hit", "cache hit")
	}
}

func ExampleWithLogger() {
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := chronon.New(chronon.WithLogger(log, chronon.LogFilter{
		Units:      []string{"core0.*"},
		Categories: []string{"miss"},
		From:       1,
		Until:      7,
	}))
	_ = s.Group("core0").Add("l1", &Cache{})
	_ = s.Group("core1").Add("l1", &Cache{})
	_ = s.Build()
	_ = s.Run(10)
	_ = s.Close() // writes the buffered records
	// Output:
	// level=WARN msg="cache miss" cycle=3 unit=core0.l1 category=miss addr=192
	// level=WARN msg="cache miss" cycle=6 unit=core0.l1 category=miss addr=384
}
