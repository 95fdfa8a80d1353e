package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// A replay confirms what the first request did, so it waits for the
// durability barrier; when the barrier does not complete (the standby does
// not confirm) the answer is 503 outcome_unknown with Retry-After, never
// the stored 2xx, and a later retry with the key replays.
func TestReplayWaitsUntilDurable(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)

		var barriers atomic.Int64
		var fail atomic.Bool
		env.DB.SetDurableFault(func(context.Context) error {
			barriers.Add(1)
			if fail.Load() {
				return errors.New("the synchronous standby did not confirm")
			}
			return nil
		})
		t.Cleanup(func() { env.DB.SetDurableFault(nil) })

		acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("durable-1")).Status(t, http.StatusCreated)
		if n := barriers.Load(); n != 0 {
			t.Fatalf("a first request ran %d barriers; its own commit is the barrier", n)
		}
		acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("durable-1")).Status(t, http.StatusCreated)
		if n := barriers.Load(); n != 1 {
			t.Fatalf("a replay ran %d barriers; want 1", n)
		}

		fail.Store(true)
		r := acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("durable-1")).Status(t, http.StatusServiceUnavailable)
		if e := r.Err(t); e.Code != models.ErrorCodeOutcomeUnknown {
			t.Fatalf("a replay whose barrier failed: code %v; want outcome_unknown", e.Code)
		}
		if r.Header.Get("Retry-After") == "" || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("headers %v; want Retry-After and no replay mark", r.Header)
		}

		fail.Store(false)
		r = acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("durable-1")).Status(t, http.StatusCreated)
		if r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatal("the retry after the barrier came back was not a replay")
		}
		if n := tenantRows(t, acme, "clients"); n != 1 {
			t.Fatalf("%d clients; want 1", n)
		}
	})
}

// A connection lost while a keyed POST commits leaves its outcome unknown:
// 503 outcome_unknown with Retry-After (not 500, not "nothing decided"),
// and the retry with the same key decides. The COMMIT is held by a
// deferred trigger that sleeps, and its backend is terminated meanwhile.
func TestCommitLostIsOutcomeUnknown(t *testing.T) {
	env := apitest.New(t, apitest.WithDB(testdb.Postgres(t)))
	acme := env.Tenant("acme")
	tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)
	for _, q := range []string{
		`CREATE FUNCTION probe_sleep() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN IF EXISTS (SELECT 1 FROM probe_hold) THEN PERFORM pg_sleep(30); END IF; RETURN NULL; END $$`,
		`CREATE TABLE probe_hold (on_ boolean)`,
		`INSERT INTO probe_hold VALUES (true)`,
		`CREATE CONSTRAINT TRIGGER probe_slow AFTER INSERT ON idempotency_keys DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION probe_sleep()`,
	} {
		if err := env.DB.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan *apitest.Response, 1)
	go func() { done <- acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("lost-1")) }()
	testdb.TerminateCommit(t, env.DB)
	var r *apitest.Response
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("no answer after the COMMIT's backend was terminated")
	}
	r.Status(t, http.StatusServiceUnavailable)
	if e := r.Err(t); e.Code != models.ErrorCodeOutcomeUnknown {
		t.Fatalf("code %v; want outcome_unknown", e.Code)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if err := env.DB.Exec(`DELETE FROM probe_hold`).Error; err != nil {
		t.Fatal(err)
	}
	// The terminated COMMIT had not committed (its deferred trigger was
	// still running): the retry runs it, once, and then replays it.
	acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("lost-1")).Status(t, http.StatusCreated)
	r = acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("lost-1")).Status(t, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("the second retry was not a replay")
	}
	if n := tenantRows(t, acme, "clients"); n != 1 {
		t.Fatalf("%d clients; want 1", n)
	}
}

// An identical re-send of an accepted fetch result is answered 200 from
// stored state; when the durability barrier does not complete it is 503
// outcome_unknown instead, and nothing changes.
func TestAcceptedAgainWaitsUntilDurable(t *testing.T) {
	clk := newClock()
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		f := newActFixture(t, env, "acme")
		actstest.Webhook(t, env.DB, f.Ctx, f.member, outbox.ActFetchData, "https://integration.example.com/hook")
		s := &scn{f: f, clk: clk, a: f.createAct(t, "durable")}
		s.a = f.getAct(t, s.a)
		s.fr = f.requestFetch(t, s.a, "revenue")
		acceptFirst("revenue", "12")(t, s)
		before := s.state(t)

		env.DB.SetDurableFault(func(context.Context) error { return errors.New("the synchronous standby did not confirm") })
		t.Cleanup(func() { env.DB.SetDurableFault(nil) })
		r := s.correlated(t, "bulk", item{field: "revenue", value: val("12")}).Status(t, http.StatusServiceUnavailable)
		if e := r.Err(t); e.Code != models.ErrorCodeOutcomeUnknown || r.Header.Get("Retry-After") == "" {
			t.Fatalf("code %v, Retry-After %q; want outcome_unknown with Retry-After", e.Code, r.Header.Get("Retry-After"))
		}
		unchangedSince(t, s, before)

		env.DB.SetDurableFault(nil)
		s.correlated(t, "bulk", item{field: "revenue", value: val("12")}).Status(t, http.StatusOK)
	})
}
