package server

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lanework/lanework/ledger"
	"github.com/stretchr/testify/require"
)

var screenshotPath = flag.String("dashboard.screenshot", "", "write TestDashboardBrowser's screenshot of the dashboard to this PNG file (default: the test's temp dir)")

// browserPath finds a Chromium to drive. Outside CI a missing browser skips
// the test loudly; with CI set it fails: there the browser test must run.
func browserPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium found (install the Debian package: apt-get install -y chromium)"
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set: " + msg)
	}
	t.Log("!!!!!!!! SKIPPING the dashboard browser test: " + msg + " !!!!!!!!")
	t.Skip(msg)
	return ""
}

// TestDashboardBrowser drives the dashboard in headless Chromium against a
// real server with auth on: it waits for the live indexes, looks up an
// account, submits a transfer through the form and waits for the page to
// show the new balance and committed index, checks that the charts have
// points and that the page fits a phone's width, saves a screenshot, then
// opens a server without the history index (its recent transfers panel
// says it is off), and fails on any console error or uncaught exception.
func TestDashboardBrowser(t *testing.T) {
	exe := browserPath(t)
	f := startLedgerServer(t, ledger.Config{Index: true}, Config{Tokens: testTokens}, false)
	u := f.httpURL()

	// Create accounts 1 and 2 (txs 1 and 2; 2 keeps history) and fund 1
	// (tx 3) before the page opens.
	_, _, err := f.l.SubmitBatch([]ledger.Op{ledger.CreateAccount{ID: 1, Ledger: 1}, ledger.CreateAccount{ID: 2, Ledger: 1, Flags: ledger.History}})
	require.NoError(t, err)
	_, err = f.l.SubmitAndWait(context.Background(), ledger.Deposit{Account: 1, Amount: 100}, ledger.Committed)
	require.NoError(t, err)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-gpu", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	var mu sync.Mutex
	var consoleErrs []string
	if err := chromedp.Do(ctx); err != nil { // start the browser
		t.Fatalf("starting %s: %v", exe, err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				consoleErrs = append(consoleErrs, m.String())
				mu.Unlock()
			}
		}
	}()
	defer func() {
		// Close the browser and wait for it and the console reader, so
		// goleak sees no chromedp goroutine.
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		if err := chromedp.Cancel(cctx); err != nil {
			t.Errorf("closing the browser: %v", err)
		}
		cancelAlloc()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, e := range consoleErrs {
			t.Errorf("browser console: %s", e)
		}
	}()

	wait := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			page, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
			t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, expr, err, page)
		}
	}
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.getElementById("+strconv.Quote(id)+").textContent"))
		require.NoError(t, err)
		return s
	}
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, steps...))
	}

	// The token rides in the fragment, which the page removes at once.
	do(chromedp.Navigate(u + "/#token=" + rwToken))
	wait("the live committed index", `document.getElementById("idx-committed").textContent === "3"`)
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string]("location.href"))
	require.NoError(t, err)
	require.NotContains(t, href, rwToken, "the token stays in the address bar")

	do(chromedp.SendKeys(chromedp.CSS("#balance-account"), "2"), chromedp.Click(chromedp.CSS("#balance-form button")))
	wait("account 2's balance", `document.getElementById("balance-out").dataset.balance === "0"`)

	do(chromedp.SetValue(chromedp.CSS("#op-type"), "transfer"),
		chromedp.SendKeys(chromedp.CSS("#op-from"), "1"), chromedp.SendKeys(chromedp.CSS("#op-to"), "2"),
		chromedp.SendKeys(chromedp.CSS("#op-amount"), "40"), chromedp.Click(chromedp.CSS("#op-form button")))
	wait("the transfer's result", `document.getElementById("op-out").dataset.tx === "4"`)
	require.Contains(t, text("op-out"), "tx 4 transfer: ok")
	require.Contains(t, text("op-out"), "account 2: credits_posted +40 → 40")
	wait("the committed index to advance", `document.getElementById("idx-committed").textContent === "4"`)
	wait("account 2's new balance", `document.getElementById("balance-out").dataset.balance === "40"`)
	require.Equal(t, "account 2: balance 40", text("balance-out"))

	// Account 2's history: the transfer, newest first, with the balance
	// after it; account 1 keeps none.
	do(chromedp.SendKeys(chromedp.CSS("#recent-account"), "2"), chromedp.Click(chromedp.CSS("#recent-form button")))
	wait("account 2's recent transfers", `Number(document.getElementById("recent-out").dataset.asOf) >= 4`)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#recent tbody tr")).map(r => Array.from(r.children).map(c => c.textContent).join("|")).join("\n")`))
	require.NoError(t, err)
	require.Equal(t, "4|transfer|+40|40", rows)
	do(chromedp.SetValue(chromedp.CSS("#recent-account"), "1"), chromedp.Click(chromedp.CSS("#recent-form button")))
	wait("account 1's refusal", `document.getElementById("recent-out").textContent.includes("history flag")`)

	do(chromedp.SendKeys(chromedp.CSS("#tx-id"), "4"), chromedp.Click(chromedp.CSS("#tx-form button")))
	wait("transaction 4", `document.getElementById("tx-out").textContent.includes("tx 4 transfer: ok")`)

	// Each poll after the first adds a point to both charts; throughput
	// has a value for every poll, latency only for polls that saw a commit.
	wait("throughput points", `Number(document.getElementById("chart-tput").dataset.points) >= 3`)
	pts, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#chart-tput polyline").getAttribute("points")`))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(strings.Fields(pts)), 3, pts)
	wait("a latency point", `Number(document.getElementById("chart-lat").dataset.points) >= 1`)
	require.Equal(t, "4", text("outcome-ok"), "outcomes count the two creations, the deposit and the transfer")
	// One row per pipeline stage, each parked or awake.
	for _, st := range []string{"transactor", "wal", "snapshotter"} {
		wait("stage "+st, `["parked", "awake"].includes(document.getElementById("stage-`+st+`-state").textContent)`)
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := *screenshotPath
	if path == "" {
		path = filepath.Join(t.TempDir(), "dashboard.png")
	}
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s (%d bytes)", path, len(png))

	// On a phone's width nothing overflows sideways.
	do(chromedp.EmulateViewport(390, 844))
	wait("the narrow layout", `document.documentElement.scrollWidth <= window.innerWidth`)

	// A ledger without the history index (the default): the panel says
	// so and its form is disabled, so the page sends no read that would be
	// refused (a console error).
	g := startServerWith(t, Config{Tokens: testTokens}, false)
	do(chromedp.Navigate(g.httpURL() + "/#token=" + rwToken))
	wait("the index-off notice", `document.getElementById("recent-out").textContent.includes("history index is off")`)
	wait("the disabled form", `document.querySelector("#recent-form button").disabled && document.getElementById("recent-account").disabled`)
}
