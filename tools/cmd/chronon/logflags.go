package main

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"CHRONON_LOG_LEVEL"}, Usage: "write the units' log to stderr from `LEVEL` (debug, info, warn, error)"},
		&cli.StringSliceFlag{Name: "log-units", EnvVars: []string{"CHRONON_LOG_UNITS"}, Usage: "log only units matching `PATTERN` (path.Match over full names, repeatable)"},
		&cli.StringSliceFlag{Name: "log-categories", EnvVars: []string{"CHRONON_LOG_CATEGORIES"}, Usage: "log only `CATEGORY` (repeatable)"},
		&cli.StringFlag{Name: "log-cycles", EnvVars: []string{"CHRONON_LOG_CYCLES"}, Usage: "log only cycles `FROM:UNTIL` (inclusive; either side may be empty)"},
	}
}

// logOption returns the simulation's logger option from the log flags;
// none when no --log-level is given.
func logOption(c *cli.Context) ([]chronon.LoadOption, error) {
	name := c.String("log-level")
	if name == "" {
		for _, f := range []string{"log-units", "log-categories", "log-cycles"} {
			if c.IsSet(f) {
				return nil, exitcode.Usage("--%s needs --log-level", f)
			}
		}
		return nil, nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return nil, exitcode.Usage("--log-level %q: want debug, info, warn or error", name)
	}
	f := chronon.LogFilter{Level: level, Units: c.StringSlice("log-units"), Categories: c.StringSlice("log-categories")}
	if r := c.String("log-cycles"); r != "" {
		from, until, ok := strings.Cut(r, ":")
		var err error
		if ok && from != "" {
			f.From, err = strconv.ParseUint(from, 10, 64)
		}
		if err == nil && ok && until != "" {
			f.Until, err = strconv.ParseUint(until, 10, 64)
		}
		if !ok || err != nil || (f.Until != 0 && f.Until < f.From) {
			return nil, exitcode.Usage("--log-cycles %q: want FROM:UNTIL, such as 1000:2000 or 1000:", r)
		}
	}
	l := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	return []chronon.LoadOption{chronon.WithSimOptions(chronon.WithLogger(l, f))}, nil
}
