// Package exitcode holds the exit-status convention of lanework's
// command-line programs: 0 success, 1 failure, 2 bad usage.
package exitcode

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
)

// Usage returns an error for a bad invocation; Of maps it to status 2.
func Usage(format string, args ...any) error {
	return cli.Exit(fmt.Sprintf(format, args...), 2)
}

// Of returns the process exit status for an error returned by a cli.App:
// 0 for nil, the code of a cli.ExitCoder anywhere in the chain, else 1.
func Of(err error) int {
	if err == nil {
		return 0
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}
