// Package version reports what a lanework program was built from, read from
// the build information the go command embeds (runtime/debug.ReadBuildInfo).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// String describes the build: the tools module's version ("(devel)" for a
// build inside the repository), the VCS revision when the go command
// recorded one, and the Go version, e.g.
//
//	v0.2.0 (go1.26.8 linux/amd64)
//	(devel) revision 878309d1c2e4, modified (go1.26.8 linux/amd64)
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module information)"
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) string {
	var b strings.Builder
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	b.WriteString(v)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		b.WriteString(" revision " + rev)
		if settings["vcs.modified"] == "true" {
			b.WriteString(", modified")
		}
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	fmt.Fprintf(&b, " (%s %s/%s)", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
