package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/auth"
)

// A body of a type the operation does not declare (plain text, a form, XML)
// is 415 in the error format with its code, and nothing is applied; JSON
// with a charset is still JSON, and the token endpoint keeps its form
// bodies.
func TestUnsupportedMediaType(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleAdmin), auth.ScopeClientsWrite, auth.ScopeWebhooksWrite)
		for _, c := range []struct{ method, path, ct, body string }{
			{"POST", "/api/1.0/clients", "text/plain", `{"company_name":"Nordic Timber AS","org_number":"923456781","country":"NO","credit_limit":1}`},
			{"POST", "/api/1.0/clients", "application/x-www-form-urlencoded", "company_name=Nordic+Timber+AS&org_number=923456781&country=NO&credit_limit=1"},
			{"PATCH", "/api/1.0/clients/1", "application/xml", "<client/>"},
			{"POST", "/api/1.0/webhooks/1/rotate-secret", "text/plain", "now"},
		} {
			r := acme.DoHeader(c.method, c.path, tok, c.body, http.Header{"Content-Type": {c.ct}}).Status(t, http.StatusUnsupportedMediaType)
			e := r.Err(t)
			if e.Code != models.ErrorCodeUnsupportedMediaType || !strings.Contains(e.Message, "application/json") {
				t.Errorf("%s %s as %s: %+v", c.method, c.path, c.ct, e)
			}
		}
		if n := tenantRows(t, acme, "clients"); n != 0 {
			t.Fatalf("%d clients created by refused bodies", n)
		}
		acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, http.Header{"Content-Type": {"application/json; charset=utf-8"}}).
			Status(t, http.StatusCreated)
	})
}

func TestTokenEndpointKeepsFormBodies(t *testing.T) {
	env := apitest.New(t, apitest.WithOAuth())
	te := env.Tenant("acme")
	r := te.DoHeader(http.MethodPost, "/api/oauth/token", "", "grant_type=refresh_token&refresh_token=unknown&client_id=nobody&client_secret=x",
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	if r.Code == http.StatusUnsupportedMediaType || !strings.Contains(string(r.Body), `"error":"invalid_client"`) {
		t.Fatalf("a form body at the token endpoint: %d %s", r.Code, r.Body)
	}
}

// A second request with an Idempotency-Key whose first request is still
// running is 409 idempotency_in_flight with Retry-After; the retry after
// the first finished gets its result.
func TestIdempotencyInFlightRetryAfter(t *testing.T) {
	// The first keyed request of each run waits inside its transaction
	// until released.
	type gate struct {
		once             sync.Once
		entered, release chan struct{}
	}
	var current atomic.Pointer[gate]
	hold := func(context.Context) {
		g := current.Load()
		g.once.Do(func() {
			close(g.entered)
			<-g.release
		})
	}
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
		current.Store(g)
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsWrite)
		first := make(chan *apitest.Response, 1)
		go func() { first <- acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("slow")) }()
		<-g.entered
		r := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("slow"))
		close(g.release)
		r.Status(t, http.StatusConflict)
		if e := r.Err(t); e.Code != models.ErrorCodeIdempotencyInFlight {
			t.Fatalf("while the first runs: %+v", e)
		}
		if got := r.Header.Get("Retry-After"); got != "1" {
			t.Fatalf("Retry-After = %q, want 1", got)
		}
		(<-first).Status(t, http.StatusCreated)
		again := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("slow")).Status(t, http.StatusCreated)
		if again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("Retry-After") != "" {
			t.Fatalf("the retry: %v", again.Header)
		}
	}, apitest.WithApp(app.WithIdempotencyFault(hold)))
}
