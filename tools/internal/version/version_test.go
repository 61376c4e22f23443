package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFromBuildInfo(t *testing.T) {
	platform := " (go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"installed at a version", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}}, "v0.2.0" + platform},
		{"devel with revision", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "878309d1c2e4f00dabcdef"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) revision 878309d1c2e4, modified" + platform},
		{"no version", debug.BuildInfo{GoVersion: "go1.26.8"}, "(devel)" + platform},
	} {
		if got := fromBuildInfo(&tc.bi); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestStringNamesGoVersion(t *testing.T) {
	if s := String(); !strings.Contains(s, runtime.Version()) {
		t.Errorf("String() = %q, want it to name %s", s, runtime.Version())
	}
}
