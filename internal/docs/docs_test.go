package docs_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/internal/apitest"
)

func newEnv(t *testing.T) *apitest.Env {
	return apitest.New(t)
}

func TestDocsPageAndAssets(t *testing.T) {
	env := newEnv(t)
	// Any host, like every operational endpoint; validated against the spec.
	for _, host := range []string{"acme.localhost", "nobody.example.com", "127.0.0.1"} {
		r := env.Do(host, "GET", "/docs", "", nil).Status(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Fatalf("Content-Type = %q", ct)
		}
		body := string(r.Body)
		if !strings.Contains(body, `spec-url="/openapi.yaml"`) || !strings.Contains(body, `src="/docs/assets/redoc.standalone.js"`) {
			t.Fatalf("page does not load the local spec and bundle:\n%s", body)
		}
		if strings.Contains(body, "//cdn") || strings.Contains(body, "https://") {
			t.Fatalf("page references a remote origin:\n%s", body)
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Fatalf("CSP = %q", csp)
		}
	}
	// The assets are not API operations (not in the spec): fetched directly.
	get := func(path, host string) *http.Response {
		req, _ := http.NewRequest("GET", env.Server.URL+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for path, want := range map[string]string{
		"/docs/assets/redoc.standalone.js": "text/javascript",
		"/docs/assets/REDOC-LICENSE":       "text/plain",
	} {
		resp := get(path, "nobody.example.com")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) || len(b) == 0 {
			t.Fatalf("%s: %d %q (%d bytes)", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
		}
		if strings.Contains(string(b), "cdn.redoc.ly") {
			t.Fatalf("%s still loads from Redocly's CDN", path)
		}
		if path == "/docs/assets/REDOC-LICENSE" && !strings.Contains(string(b), "MIT License") {
			t.Fatal("licence file is not Redoc's MIT licence")
		}
	}
	for _, path := range []string{"/docs/assets/nope.js", "/docs/assets/..%2fdocs.go", "/docs/assets/"} {
		resp := get(path, "x")
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// findBrowser returns a Chromium-family executable, or "".
func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDocsRenderInBrowser loads /docs in headless Chromium and checks that
// Redoc rendered the operations from /openapi.yaml, with nothing fetched
// from another origin and no CSP violation.
func TestDocsRenderInBrowser(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium found (CI is set, so this is a failure): install chromium")
		}
		t.Skip("no Chromium found on PATH (chromium, chromium-browser, google-chrome); install it to run the browser test")
	}
	env := newEnv(t)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // containers run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	var mu sync.Mutex
	var foreign, problems []string
	_ = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if !strings.HasPrefix(u, env.Server.URL+"/") && !strings.HasPrefix(u, "blob:") && !strings.HasPrefix(u, "data:") {
				foreign = append(foreign, u)
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problems = append(problems, "exception: "+msg)
		case *cdplog.EventEntryAdded: // CSP violations, failed loads
			if ev.Entry.Level == cdplog.EntryLevelError {
				problems = append(problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				problems = append(problems, "console.error: "+strings.Join(parts, " "))
			}
		}
	})

	summaries := []string{"List clients", "Get a client", "Create a template", "Write several data points at once", "Register a webhook", "Exchange a code or a refresh token for tokens"}
	// The first action starts the browser: it gets the test's context, and
	// only later actions get a deadline (a deadline on the first would stop
	// the browser).
	if err := chromedp.Do(ctx, chromedp.Navigate(env.Server.URL+"/docs")); err != nil {
		t.Fatalf("navigate to /docs: %v", err)
	}
	// Redoc renders each operation as an h2 with its summary.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`document.body.innerText.includes("Write several data points at once")`,
		chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		mu.Lock()
		t.Fatalf("operations did not render: %v\nproblems: %v", err, problems)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("h2")).map(e => e.innerText).join("\n")`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range summaries {
		if !strings.Contains(text, s) {
			t.Errorf("operation %q not rendered; h2 texts:\n%s", s, text)
		}
	}
	// The sidebar names each tag once.
	menu, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".menu-content > div > ul > li > label")).map(e => e.innerText.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range menu {
		if seen[m] {
			t.Errorf("the sidebar names %q twice: %q", m, menu)
		}
		seen[m] = true
	}
	if !seen["Webhooks"] || len(menu) < 8 {
		t.Errorf("sidebar: %q", menu)
	}
	// The page leads to the console.
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#console-link a").getAttribute("href")`))
	if err != nil || href != "/console" {
		t.Errorf("console link %q (%v)", href, err)
	}
	if strings.Count(text, "\n") < 30 {
		t.Errorf("only %d operation headings rendered", strings.Count(text, "\n")+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 {
		t.Errorf("the page fetched from other origins: %v", foreign)
	}
	for _, p := range problems {
		t.Errorf("browser reported: %s", p)
	}
}
