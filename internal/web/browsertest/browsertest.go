// Package browsertest drives Debian's Chromium (headless, through chromedp)
// for the page tests: it finds the binary (skipping on a developer machine
// without one, failing in CI), records every console error, uncaught
// exception and failed or refused load, and checks each page it is shown
// (Shoot) at the two widths the pages are made for: labels, width, and
// axe-core's accessibility rules, with a screenshot of each.
//
// axe-core is vendored from npm (axe-core@4.14.1, axe.min.js, MPL-2.0,
// licence files beside it in assets/), like the /docs page's Redoc: no
// test loads anything from the network. To update it: `npm pack
// axe-core@4`, copy axe.min.js, LICENSE (as AXE-LICENSE) and
// LICENSE-3RD-PARTY.txt (as AXE-LICENSE-3RD-PARTY.txt) into assets/, and
// note the version here and in assets/VERSION.
//
// Screenshots go to the test's temporary directory, or, with
// FINSVC_SCREENSHOT_DIR set (an absolute path; the repository ignores
// /screenshots/), to a folder per test there, kept after the run.
package browsertest

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium finds a Chromium/Chrome binary. Without one the test skips on a
// developer machine and fails in CI (CI set), where .ci/run installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("FINSVC_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (CI is set): install Debian's chromium package")
	}
	t.Skip("no Chromium found: install Debian's chromium package (apt-get install chromium) to run the browser tests")
	return ""
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	Ctx context.Context
	t   testing.TB
	dir string

	mu       sync.Mutex
	problems []string
	// expected are the document URLs a test opens expecting an error
	// status (OpenStatus): Chromium logs those loads as errors.
	expected map[string]bool
	// status is the status of the last document loaded.
	status int64
}

// Options tune New.
type Options struct {
	// Timeout bounds everything the browser does in the test (default 2
	// minutes): a hung page fails the test instead of hanging CI.
	Timeout time.Duration
}

// New starts Chromium, resolving every *.localhost name to 127.0.0.1 (the
// tenant hosts of the test server). It is closed when the test ends, and
// the test fails if any problem was recorded by then.
func New(t testing.TB, o Options) *Browser {
	t.Helper()
	exe := Chromium(t)
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("host-resolver-rules", "MAP *.localhost 127.0.0.1"),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	bctx, cancelTimeout := context.WithTimeout(bctx, o.Timeout)
	dir := t.TempDir()
	if d := os.Getenv("FINSVC_SCREENSHOT_DIR"); d != "" {
		// To look at the pages: keep the screenshots after the test.
		dir = filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := &Browser{Ctx: bctx, t: t, dir: dir}
	// Listen starts the browser; chromedp enables the runtime, log and
	// network domains of the tab.
	if err := chromedp.Listen(bctx, b.record); err != nil {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		t.Fatalf("browser: start: %v", err)
	}
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		for _, p := range b.Problems() {
			t.Errorf("browser: %s", p)
		}
	})
	return b
}

// record keeps what a clean page never produces.
func (b *Browser) record(ev any) {
	var p string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, fmt.Sprint(a.Value))
			}
			p = "console." + string(e.Type) + ": " + strings.Join(parts, " ")
		}
	case *runtime.EventExceptionThrown:
		p = "uncaught exception: " + e.ExceptionDetails.Text
	case *log.EventEntryAdded:
		// Failed loads, refused content (CSP), mixed content, …
		b.mu.Lock()
		expected := e.Entry.Source == log.EntrySourceNetwork && b.expected[e.Entry.URL]
		b.mu.Unlock()
		if e.Entry.Level == log.EntryLevelError && !expected {
			p = fmt.Sprintf("console %s error: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventLoadingFailed:
		if !e.Canceled {
			p = fmt.Sprintf("load failed (%s): %s", e.Type, e.ErrorText)
		}
	case *network.EventResponseReceived:
		if e.Type == network.ResourceTypeDocument {
			b.mu.Lock()
			b.status = e.Response.Status
			b.mu.Unlock()
		}
		if e.Type != network.ResourceTypeDocument && e.Response.Status >= 400 {
			p = fmt.Sprintf("asset %s answered %d", e.Response.URL, e.Response.Status)
		}
	}
	if p != "" {
		b.mu.Lock()
		b.problems = append(b.problems, p)
		b.mu.Unlock()
	}
}

// Problems returns what was recorded so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Do runs actions, failing the test (with what) on error.
func (b *Browser) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.Ctx, actions...); err != nil {
		b.t.Fatalf("browser: %s: %v (problems so far: %v)", what, err, b.Problems())
	}
}

// Eval evaluates a JavaScript expression into T, failing the test on error.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// Text returns the text content of the first node matching the CSS
// selector sel ("" when there is none).
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	return Eval[string](b, fmt.Sprintf("(document.querySelector(%q) || {textContent: ''}).textContent", sel))
}

// Count returns the number of nodes matching the CSS selector sel.
func (b *Browser) Count(sel string) int {
	b.t.Helper()
	return Eval[int](b, fmt.Sprintf("document.querySelectorAll(%q).length", sel))
}

// Path returns the current page's path and query.
func (b *Browser) Path() string {
	b.t.Helper()
	return Eval[string](b, "location.pathname + location.search")
}

// Submit clicks the element matching the CSS selector sel and waits until
// the page it leads to has loaded.
func (b *Browser) Submit(sel string) {
	b.t.Helper()
	Eval[int](b, "window.__browsertestOld = 1")
	b.Do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	b.waitNewPage("after clicking " + sel)
}

// Keys types keys into the focused element and waits for a new page when
// newPage (Enter on a form).
func (b *Browser) Keys(keys string, newPage bool) {
	b.t.Helper()
	if newPage {
		Eval[int](b, "window.__browsertestOld = 1")
	}
	b.Do("keys", chromedp.KeyEvent(keys))
	if newPage {
		b.waitNewPage("after typing")
	}
}

// waitNewPage polls until the marker Submit left on the old page is gone
// and the new page has loaded. Evaluations fail while the page is being
// replaced; that is part of waiting.
func (b *Browser) waitNewPage(what string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		done, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool]("window.__browsertestOld === undefined && document.readyState === 'complete'"))
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) || b.Ctx.Err() != nil {
			b.t.Fatalf("browser: no new page %s (last error %v, problems %v)", what, err, b.Problems())
		}
		time.Sleep(25 * time.Millisecond) // polling interval, not an assertion
	}
}

// Open navigates to url and waits for it to load.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.Do("open "+url, chromedp.Navigate(url))
}

// Status is the HTTP status of the last page loaded.
func (b *Browser) Status() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int(b.status)
}

// Allow makes an error status of the page at url (a refused form post,
// say) expected rather than a problem.
func (b *Browser) Allow(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.expected == nil {
		b.expected = map[string]bool{}
	}
	b.expected[url] = true
}

// OpenStatus opens url expecting the page to answer status (an error page
// is then not a problem) and fails the test when it answers another.
func (b *Browser) OpenStatus(url string, status int) {
	b.t.Helper()
	b.Allow(url)
	b.Open(url)
	if got := b.Status(); got != status {
		b.t.Fatalf("browser: %s answered %d, want %d", url, got, status)
	}
}

// Fill replaces the value of the input matching the CSS selector sel.
func (b *Browser) Fill(sel, value string) {
	b.t.Helper()
	// Typed like a person would (focus, then keys), so the page sees input.
	Eval[bool](b, fmt.Sprintf("(() => { const el = document.querySelector(%q); el.value = ''; el.focus(); return true })()", sel))
	b.Do("fill "+sel, chromedp.KeyEvent(value))
}

// checkPage is what every page must satisfy: each visible form control has
// a label, and nothing is wider than the window (tables scroll inside
// their own box).
const checkPage = `(() => {
  const bad = [];
  for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
    if (!el.labels || el.labels.length === 0) bad.push('no label: ' + (el.id || el.name));
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    bad.push('page wider than the window: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
  if (!document.querySelector('link[rel=stylesheet]') || document.styleSheets.length === 0 || document.styleSheets[0].cssRules.length === 0)
    bad.push('stylesheet not applied');
  return bad;
})()`

//go:embed assets/axe.min.js
var axeSource string

// axeRun runs every axe-core rule of WCAG 2.0, 2.1 and 2.2 at levels A
// and AA and the best practices on the page (named by tag: axe's defaults
// leave WCAG 2.2's rules, such as target-size, out) and returns one line
// per violation, naming up to five of the elements at fault.
const axeRun = `(async () => {
  const r = await axe.run(document, {
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22a', 'wcag22aa', 'best-practice']},
    resultTypes: ['violations'],
  });
  return r.violations.map(v => 'axe ' + v.id + ' (' + v.impact + '): ' + v.help + ' at ' +
    v.nodes.slice(0, 5).map(n => n.target.join(' ')).join(', '));
})()`

// Axe runs axe-core on the current page (loading it into the page first,
// through the DevTools protocol, which the page's CSP does not govern)
// and returns its violations.
func (b *Browser) Axe() []string {
	b.t.Helper()
	if !Eval[bool](b, "typeof axe !== 'undefined'") {
		Eval[bool](b, axeSource+";\ntrue")
	}
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: axe: %v", err)
	}
	return v
}

// Shoot checks the current page at 1280×800 and at 390×844 (a phone):
// every control labelled, nothing wider than the window, and 0 axe-core
// violations; it saves a screenshot of each as name-<width>.png.
func (b *Browser) Shoot(name string) {
	b.t.Helper()
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		b.Do(fmt.Sprintf("viewport %d px", size[0]), chromedp.EmulateViewport(size[0], size[1]))
		bad := append(Eval[[]string](b, checkPage), b.Axe()...)
		buf, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100) /* 100: PNG */)
		if err != nil {
			b.t.Fatalf("browser: screenshot %s at %d px: %v", name, size[0], err)
		}
		for _, p := range bad {
			b.t.Errorf("page %s at %d px: %s", name, size[0], p)
		}
		if err := os.WriteFile(filepath.Join(b.dir, fmt.Sprintf("%s-%d.png", name, size[0])), buf, 0o600); err != nil {
			b.t.Fatal(err)
		}
	}
	b.Do("reset viewport", chromedp.EmulateViewport(1280, 800))
}
