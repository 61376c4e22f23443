package server

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func dashGet(t *testing.T, url, token string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// The page and its assets need no token; the data does, under the API's
// scopes.
func TestDashboardAuth(t *testing.T) {
	f := startServer(t, Config{Tokens: testTokens})
	u := f.httpURL()
	for path, ctype := range map[string]string{"/": "text/html", "/dashboard/app.js": "text/javascript",
		"/dashboard/style.css": "text/css", "/dashboard/icon.svg": "image/svg+xml"} {
		resp, body := dashGet(t, u+path, "")
		require.Equal(t, 200, resp.StatusCode, path)
		assert.Contains(t, resp.Header.Get("Content-Type"), ctype, path)
		assert.Equal(t, dashboardCSP, resp.Header.Get("Content-Security-Policy"), path)
		assert.NotEmpty(t, body, path)
	}
	for _, path := range []string{"/dashboard/nope.js", "/index.htm", "/dashboard/../v1/status"} {
		resp, _ := dashGet(t, u+path, "")
		assert.Contains(t, []int{401, 404}, resp.StatusCode, path)
	}
	resp, _ := dashGet(t, u+"/v1/status", "")
	assert.Equal(t, 401, resp.StatusCode, "status without a token")
	resp, _ = dashGet(t, u+"/v1/status", "wrong-token-0123456789")
	assert.Equal(t, 401, resp.StatusCode, "status with a wrong token")
	resp, _ = dashGet(t, u+"/v1/status", roToken)
	assert.Equal(t, 200, resp.StatusCode, "status with a read_only token")

	req, err := http.NewRequest("POST", u+"/", nil)
	require.NoError(t, err)
	pr, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	pr.Body.Close()
	assert.Equal(t, 401, pr.StatusCode, "only GET and HEAD of the page skip the token")
}

// TestDashboardStatus checks that /v1/status follows the ledger.
func TestDashboardStatus(t *testing.T) {
	f := startServer(t, Config{})
	u := f.httpURL()
	code, out := httpDo(t, "POST", u+"/v1/ops", `{"type":"deposit","account":1,"amount":100}`)
	require.Equal(t, 200, code, out)
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"transfer","from":1,"to":2,"amount":500}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, "exceeds_credits", out["fail"])

	resp, body := dashGet(t, u+"/v1/status", "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var s jsonStatus
	require.NoError(t, json.Unmarshal(body, &s), string(body))
	assert.True(t, s.Up)
	assert.EqualValues(t, f.base+2, s.Indexes.Committed)
	assert.EqualValues(t, f.base+2, s.Committed)
	assert.NotZero(t, s.WAL.Batches)
	assert.NotZero(t, s.WAL.Bytes)
	assert.Positive(t, s.WAL.SyncNs)
	assert.EqualValues(t, 2, s.Server.Ops)
	assert.Equal(t, 3, s.Pressure.Stages)
	var names []string
	var parks uint64
	for _, st := range s.Pressure.PerStage {
		names, parks = append(names, st.Name), parks+st.Parks
	}
	assert.Equal(t, []string{"transactor", "wal", "snapshotter"}, names)
	assert.GreaterOrEqual(t, parks, s.Pressure.Parks, "per-stage parks, loaded after the total, add up to at least it")
	var syncs uint64
	for _, c := range s.WAL.SyncHist.Counts {
		syncs += c
	}
	assert.Len(t, s.WAL.SyncHist.Counts, ledger.HistogramBuckets+1)
	assert.EqualValues(t, 50_000, s.WAL.SyncHist.FirstNs)
	assert.Equal(t, s.WAL.Batches, syncs, "every synced batch is in the histogram")
	got := map[string]uint64{}
	for _, o := range s.Outcomes {
		got[o.Name] = o.Count
	}
	want := map[string]uint64{}
	for f := ledger.OK; int(f) < ledger.NumFailReasons; f++ {
		want[f.String()] = 0
	}
	want["ok"] = uint64(f.base) + 1 // the accounts created, and the deposit
	want["exceeds_credits"] = 1
	assert.Equal(t, want, got)
	assert.NotZero(t, s.TimeMs)

	// After Close the status still answers, and says so.
	require.NoError(t, f.l.Close())
	resp, body = dashGet(t, u+"/v1/status", "")
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, json.Unmarshal(body, &s))
	assert.False(t, s.Up)
	assert.True(t, s.Closed)
}

// externalURL finds URLs to other origins; the SVG namespace is a name,
// never fetched.
var externalURL = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)

// TestDashboardWeight holds the page to its bars: everything it loads is
// embedded, under 300 KiB in all, and nothing points at another origin.
func TestDashboardWeight(t *testing.T) {
	var total int64
	err := fs.WalkDir(dashboardFS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dashboardFS, path)
		if err != nil {
			return err
		}
		total += int64(len(b))
		for _, m := range externalURL.FindAllString(string(b), -1) {
			if !strings.HasSuffix(m, "//www.w3.org") {
				t.Errorf("%s refers to another origin: %s", path, m)
			}
		}
		return nil
	})
	require.NoError(t, err)
	t.Logf("dashboard page weight: %d bytes", total)
	assert.Less(t, total, int64(300<<10))
}
