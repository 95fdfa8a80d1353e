package httpapi_test

import (
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// With the database gone, every operation of the JSON API answers 503 in
// the error format with Retry-After (the spec's ServiceUnavailable), never
// a 500 or a misleading 404; each request carries a valid token and a
// valid body (the spec's example), so it reaches the handler. On
// PostgreSQL the database then comes back and requests succeed again.
// answersWithoutDatabase are the operations whose answer is read from the
// spec at startup.
var answersWithoutDatabase = map[string]bool{"listEventTypes": true}

func TestDatabaseOutageEveryOperation(t *testing.T) {
	ops := apiOps(t)
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	if len(ops) < 30 {
		t.Fatalf("found %d operations in the spec", len(ops))
	}
	// Declared, not left to `default`: generated clients type 503 only
	// when the operation names it.
	for _, o := range ops {
		if r := o.op.Responses.Value("503"); r == nil || r.Ref != "#/components/responses/ServiceUnavailable" {
			t.Errorf("%s %s does not declare 503 ServiceUnavailable", o.method, o.path)
		}
	}
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			d := testdb.Open(t, dialect)
			// The production resolver caches tenants, so during an outage
			// the host still resolves and the request reaches its handler;
			// for as long as the whole run takes on a loaded machine (the
			// default 30 s did not last a CI run).
			env := apitest.New(t, apitest.WithDB(d), apitest.WithApp(app.WithTenants(tenant.NewStore(d, tenant.WithCacheTTL(time.Hour)))))
			acme := env.Tenant("acme")
			tok := acme.AdminToken()
			acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK)
			restore := testdb.TakeDown(t, d)
			for _, o := range ops {
				r := acme.Do(o.method, fillPath(t, o), tok, exampleBody(t, o))
				if answersWithoutDatabase[o.op.OperationID] {
					r.Status(t, http.StatusOK)
					continue
				}
				if r.Code != http.StatusServiceUnavailable {
					t.Errorf("%s %s during an outage: %d %s", o.method, o.path, r.Code, r.Body)
					continue
				}
				if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n <= 0 {
					t.Errorf("%s %s: Retry-After = %q", o.method, o.path, r.Header.Get("Retry-After"))
				}
			}
			if restore == nil {
				return
			}
			restore()
			// The pool finds its terminated connections on use: the first
			// requests after the database returns may still answer 503.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				r := acme.Do("GET", "/api/1.0/clients", tok, nil)
				if r.Code == http.StatusOK {
					break
				}
				if r.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
					t.Fatalf("after the database came back: %d %s", r.Code, r.Body)
				}
			}
		})
	}
}
