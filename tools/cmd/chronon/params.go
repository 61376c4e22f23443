package main

import (
	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func paramFlag() *cli.StringSliceFlag {
	return &cli.StringSliceFlag{Name: "param", Aliases: []string{"p"}, EnvVars: []string{"CHRONON_PARAM"}, Usage: "override a unit parameter, `unit.param=value` (repeatable)"}
}

// paramOverrides parses the -p flags.
func paramOverrides(c *cli.Context) ([]chronon.ParamOverride, error) {
	var out []chronon.ParamOverride
	for _, p := range c.StringSlice("param") {
		o, err := chronon.ParseParamOverride(p)
		if err != nil {
			return nil, exitcode.Usage("%v", err)
		}
		out = append(out, o)
	}
	return out, nil
}
