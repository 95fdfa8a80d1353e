package httpapi_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// catchUpScript is the README's "Catching up after downtime" shell
// snippet, as printed: the ```sh block that pages with ending_before.
func catchUpScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.ReplaceAll(string(b), "\r\n", "\n")
	sec := readme[strings.Index(readme, "### Catching up after downtime"):]
	sec = sec[:strings.Index(sec[4:], "\n### ")+4]
	var found []string
	for _, m := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```$").FindAllStringSubmatch(sec, -1) {
		if strings.Contains(m[1], "ending_before=$LAST") {
			found = append(found, m[1])
		}
	}
	if len(found) != 1 {
		t.Fatalf("the catching-up section has %d sh blocks paging with ending_before=$LAST; want one", len(found))
	}
	return found[0]
}

// TestCatchingUpAsTheREADMESays runs the README's catching-up recipe, its
// shell snippet exactly as printed (only the example's last id is
// replaced, as a reader would), with curl and jq against the service over
// real HTTP on loopback, at the host the README names. A receiver
// processes webhooks, deduplicating by id, until it goes down; changes go
// on while its deliveries fail; then it reconciles from GET /events after
// the last id it processed. Counted against every event the service
// emitted: none is missed, none is processed twice, and the snippet lists
// exactly the events after the last processed one, oldest first (so the
// 105 events of the downtime take two pages of 100).
func TestCatchingUpAsTheREADMESays(t *testing.T) {
	script := catchUpScript(t)
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			// CI installs them (.ci/run); a fresh machine's go test ./...
			// must pass without them.
			if os.Getenv("CI") != "" {
				t.Fatalf("the README's recipe needs %s: %v", tool, err)
			}
			t.Skipf("the README's recipe needs %s, which this machine lacks: %v", tool, err)
		}
	}
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)

			// The receiver: processes each event once (dedupe by id), in
			// arrival order, and answers 503 while down.
			var (
				mu        sync.Mutex
				processed = map[string]int{} // id → times processed
				order     []string           // ids in the order processed
				down      atomic.Bool
				failed    atomic.Int64
			)
			process := func(id string) bool {
				mu.Lock()
				defer mu.Unlock()
				if processed[id] > 0 {
					return false
				}
				processed[id]++
				order = append(order, id)
				return true
			}
			rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if down.Load() {
					failed.Add(1)
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				if err := apitest.ValidateEvent(body); err != nil {
					t.Errorf("delivery: %v", err)
				}
				var ev struct{ ID string }
				if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
					t.Errorf("delivery without an id: %s", body)
				}
				process(ev.ID)
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(rcv.Close)
			pool := x509.NewCertPool()
			pool.AddCert(rcv.Certificate())
			env := apitest.New(t, apitest.WithDB(d),
				apitest.WithConfig(func(c *config.Config) { c.WebhookAllowPrivate = true }),
				apitest.WithApp(app.WithDeliveryOptions(delivery.WithClientOptions(httpclient.Options{RootCAs: pool}))))
			if err := env.App.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(env.App.Stop)

			demo := env.Tenant("demo") // demo.localhost, the README's host
			user := demo.User(auth.RoleMember)
			tok := demo.Token(user, auth.ScopeClientsRead, auth.ScopeClientsWrite, auth.ScopeWebhooksRead,
				auth.ScopeWebhooksWrite, auth.ScopeEventsRead)
			for _, kind := range []string{outbox.ClientCreated, outbox.ClientUpdated} {
				demo.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": kind, "target": rcv.URL + "/" + kind}).Status(t, http.StatusCreated)
			}
			n := 0
			change := func() {
				t.Helper()
				n++
				var c models.Client
				demo.Do("POST", "/api/1.0/clients", tok, map[string]any{"company_name": fmt.Sprint("Catch ", n),
					"org_number": fmt.Sprint(1000 + n), "country": "NO", "credit_limit": 1}).Status(t, http.StatusCreated).Decode(t, &c)
				if n%4 == 0 {
					demo.Do("PATCH", fmt.Sprintf("/api/1.0/clients/%d", c.Id), tok, map[string]any{"credit_limit": 2}).Status(t, http.StatusOK)
				}
			}
			waitFor := func(what string, ok func() bool) {
				t.Helper()
				for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("waited a minute for %s", what)
					}
				}
			}

			// Up: webhooks are processed as they come.
			for range 5 {
				change()
			}
			waitFor("the first deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 6 })
			mu.Lock()
			last := order[len(order)-1] // the last id processed (arrival order, not necessarily the newest)
			mu.Unlock()

			// Down: changes go on, their deliveries fail.
			down.Store(true)
			for range 84 { // 84 clients and 21 updates: 105 events
				change()
			}
			waitFor("a failed delivery", func() bool { return failed.Load() > 0 })

			// Reconcile: the README's snippet, as printed, from the last id
			// processed.
			lastLine := regexp.MustCompile(`(?m)^LAST=\S+`)
			if len(lastLine.FindAllString(script, -1)) != 1 {
				t.Fatalf("the snippet has no single LAST= line:\n%s", script)
			}
			run := lastLine.ReplaceAllLiteralString(script, "LAST="+last)
			u, _ := url.Parse(env.Server.URL)
			cmd := exec.Command("bash", "-c", `set -euo pipefail
curl() { command curl --fail-with-body --connect-to "demo.localhost:8080:`+u.Hostname()+`:`+u.Port()+`" "$@"; }
`+run)
			cmd.Env = append(os.Environ(), "ACCESS_TOKEN="+tok)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the README's snippet: %v\n%s", err, out)
			}
			var listed []string // "event id", in the order the snippet processed them
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				rest, ok := strings.CutPrefix(line, "process ")
				if !ok {
					t.Fatalf("the snippet printed %q", line)
				}
				listed = append(listed, rest)
			}
			skipped, twice := 0, 0
			seen := map[string]bool{}
			for _, l := range listed {
				id := l[strings.LastIndex(l, " ")+1:]
				if seen[id] {
					twice++
				}
				seen[id] = true
				if !process(id) {
					skipped++
				}
			}

			// Counted against what the service emitted (GET /events,
			// newest first, every page).
			var emitted []string // "event id", oldest first
			after := ""
			for {
				path := "/api/1.0/events?limit=100"
				if after != "" {
					path += "&starting_after=" + after
				}
				var page models.EventList
				demo.Do("GET", path, tok, nil).Status(t, http.StatusOK).Decode(t, &page)
				for _, e := range page.Data {
					emitted = append([]string{e.Event + " " + e.Id.String()}, emitted...)
				}
				if !page.HasMore {
					break
				}
				after = page.Data[len(page.Data)-1].Id.String()
			}
			if len(emitted) != 111 {
				t.Fatalf("the service emitted %d events, want 111 (89 clients created, 22 updated)", len(emitted))
			}
			mu.Lock()
			defer mu.Unlock()
			missed, double := 0, 0
			for _, e := range emitted {
				id := e[strings.LastIndex(e, " ")+1:]
				switch processed[id] {
				case 0:
					missed++
				case 1:
				default:
					double++
				}
			}
			if missed != 0 || double != 0 || len(processed) != len(emitted) || twice != 0 {
				t.Fatalf("missed %d, processed twice %d, processed %d of %d emitted, listed twice by the snippet %d",
					missed, double, len(processed), len(emitted), twice)
			}
			// The snippet listed exactly the events committed after the
			// last one processed, oldest first; what webhooks had brought
			// already was skipped by id.
			var want []string
			for i, e := range emitted {
				if strings.HasSuffix(e, " "+last) {
					want = emitted[i+1:]
				}
			}
			if strings.Join(listed, "\n") != strings.Join(want, "\n") {
				t.Fatalf("the snippet listed %d events, want the %d after %s, oldest first", len(listed), len(want), last)
			}
			if len(listed) <= 100 {
				t.Fatalf("the snippet listed %d events: one page, the paging is not exercised", len(listed))
			}
			t.Logf("emitted %d; webhooks processed %d before the downtime (%d delivery attempts failed during it); the snippet listed %d, %d of them already processed; missed 0, processed twice 0",
				len(emitted), len(emitted)-len(listed)+skipped, failed.Load(), len(listed), skipped)
		})
	}
}
