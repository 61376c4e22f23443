package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a topology: YAML, unit types, ports, zero-delay cycles",
		ArgsUsage: "topology.yaml",
		Flags:     []cli.Flag{jsonFlag("print the summary as JSON")},
		Action: func(c *cli.Context) error {
			path, err := topologyArg(c)
			if err != nil {
				return err
			}
			s, cfg, err := chronon.Load(path, registry())
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			v := struct {
				Path        string `json:"path"`
				Units       int    `json:"units"`
				Connections int    `json:"connections"`
				Cycles      uint64 `json:"cycles"`
				Workers     int    `json:"workers"`
			}{path, len(s.Units()), s.Connections(), cfg.Cycles, cfg.Workers}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, v)
			}
			fmt.Fprintf(c.App.Writer, "%s: ok: %d units, %d connections, %d cycles, %d workers\n",
				v.Path, v.Units, v.Connections, v.Cycles, v.Workers)
			return nil
		},
	}
}
