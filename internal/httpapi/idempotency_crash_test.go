package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// The child process of TestIdempotencyKilledBeforeCommit: a server on the
// parent's database whose keyed POSTs kill the process (SIGKILL) after the
// request's effects and its key are written, before the commit.
const envFaultChild = "FINSVC_TEST_IDEMPOTENCY_FAULT_CHILD"

func TestIdempotencyFaultChild(t *testing.T) {
	spec := os.Getenv(envFaultChild)
	if spec == "" {
		t.Skip("run by TestIdempotencyKilledBeforeCommit")
	}
	// spec: <database url> <tenant id> <user id>
	f := strings.Fields(spec)
	tid, _ := strconv.ParseInt(f[1], 10, 64)
	uid, _ := strconv.ParseInt(f[2], 10, 64)
	d, err := db.Open(context.Background(), f[0], "", testdb.Logger())
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, apitest.WithDB(d), apitest.WithApp(app.WithIdempotencyFault(func(context.Context) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	})))
	tok := env.Tokens.Issue(&auth.Principal{TenantID: tid, UserID: uid, Role: auth.RoleAdmin, ClientID: "test-app", Scopes: auth.AllScopes})
	fmt.Printf("READY %s %s\n", env.Server.URL, tok)
	time.Sleep(time.Minute) // until the parent's request kills it
}

// A replica killed inside a keyed POST, after the request's rows, its
// outbox event and its key's row were written and before they commit:
// nothing of it remains, and the retry with the key runs at once (no lease
// to wait out), exactly once, and is then replayed. Both dialects; the
// process is really killed.
func TestIdempotencyKilledBeforeCommit(t *testing.T) {
	if os.Getenv(envFaultChild) != "" {
		t.Skip("in the child")
	}
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			var url string
			if d.Dialect == db.Postgres {
				url, _ = testdb.URLs(t, d)
			} else {
				var seq int
				var name, file string
				if err := d.Raw("PRAGMA database_list").Row().Scan(&seq, &name, &file); err != nil {
					t.Fatal(err)
				}
				url = "sqlite:" + filepath.Clean(file)
			}
			env := apitest.New(t, apitest.WithDB(d))
			acme := env.Tenant("acme")
			admin := acme.User(auth.RoleAdmin)
			tok := acme.Token(admin, auth.AllScopes...)
			acme.Do("POST", "/api/1.0/clients", tok, nordic).Status(t, http.StatusCreated)
			acme.Do("POST", "/api/1.0/templates", tok, creditReviewJSON).Status(t, http.StatusCreated)
			acme.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": "act.created", "target": "https://hooks.example.com/a"}).
				Status(t, http.StatusCreated)

			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestIdempotencyFaultChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", envFaultChild, url, acme.Tenant.ID, admin))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var childURL, childTok string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
					childURL, childTok = f[1], f[2]
					break
				}
			}
			if childURL == "" {
				t.Fatalf("the child did not start: %v", sc.Err())
			}
			go func() { _, _ = bufio.NewReader(out).WriteTo(discard{}) }()

			eventsBefore := tenantRows(t, acme, "events") // the fixture's client.created
			body := `{"client_id": 1, "template_id": 1, "title": "Killed mid-request"}`
			req, _ := http.NewRequestWithContext(ctx, "POST", childURL+"/api/1.0/acts", strings.NewReader(body))
			req.Host = acme.Host
			req.Header.Set("Authorization", "Bearer "+childTok)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "killed")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("the child answered %d; want it killed mid-request", resp.StatusCode)
			}
			werr := cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the child ended with %v; want SIGKILL", werr)
			}
			if n := tenantRows(t, acme, "acts"); n != 0 {
				t.Fatalf("%d acts after the kill; want 0", n)
			}
			if n := tenantRows(t, acme, "idempotency_keys"); n != 0 {
				t.Fatalf("%d keys after the kill; want 0", n)
			}
			if n := tenantRows(t, acme, "events") - eventsBefore; n != 0 {
				t.Fatalf("%d events after the kill; want 0", n)
			}

			// The retry, on a surviving replica: runs once, as soon as the
			// database has seen the dead connection (PostgreSQL ends its
			// transaction, and the claim with it, when the socket closes:
			// until then the retry is told 409 in flight).
			start := time.Now()
			var first *apitest.Response
			for {
				first = acme.DoHeader("POST", "/api/1.0/acts", tok, body, withKey("killed"))
				if first.Code != http.StatusConflict || time.Since(start) > 5*time.Second {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			first.Status(t, http.StatusCreated)
			t.Logf("the retry ran %v after the kill", time.Since(start))
			again := acme.DoHeader("POST", "/api/1.0/acts", tok, body, withKey("killed")).Status(t, http.StatusCreated)
			if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
				t.Fatalf("second retry not replayed: %s", again.Body)
			}
			if n := tenantRows(t, acme, "acts"); n != 1 {
				t.Fatalf("%d acts; want 1", n)
			}
			var events int64
			env.DB.Table("events").Where("tenant_id = ? AND kind = ?", acme.Tenant.ID, "act.created").Count(&events)
			if events != 1 {
				t.Fatalf("%d act.created events; want 1", events)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
