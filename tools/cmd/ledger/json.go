package main

import (
	"encoding/json"
	"io"

	"github.com/urfave/cli/v2"
)

// The --json output of the commands prints the HTTP API's answers
// (ledger/server/jsonapi), so a script can switch between the two;
// TestJSONMatchesHTTP holds them together.

func jsonFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "json", EnvVars: []string{"LEDGER_JSON"}, Usage: "print the result as JSON (the HTTP API's fields)"}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
