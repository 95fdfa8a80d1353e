package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

func TestDeliversSignedEnvelope(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		wh, secret := f.register(outbox.ActCreated, rc.URL+"/hook")
		other, _ := f.register(outbox.ActFetchData, rc.URL+"/other") // another kind: nothing for it
		clk := newClock()
		ids := f.emit(outbox.ActCreated, 1, nil, nil)
		w := f.worker(delivery.WithNow(clk.Now))
		n, err := w.RunOnce(f.ctx)
		if err != nil || n != 1 {
			t.Fatalf("RunOnce = %d, %v", n, err)
		}
		reqs := rc.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		r := reqs[0]
		mustEqual(t, "envelope id", r.Env.ID, ids[0])
		mustEqual(t, "event", r.Env.Event, outbox.ActCreated)
		mustEqual(t, "webhook-id", r.Header.Get("webhook-id"), ids[0])
		mustEqual(t, "content type", r.Header.Get("Content-Type"), "application/json")
		var data map[string]any
		if err := json.Unmarshal(r.Env.Data, &data); err != nil || data["seq"] != float64(0) {
			t.Fatalf("data %s: %v", r.Env.Data, err)
		}
		if r.Env.OccurredAt.IsZero() {
			t.Fatal("no occurred_at")
		}
		var keys map[string]json.RawMessage
		json.Unmarshal(r.Body, &keys)
		if len(keys) != 4 {
			t.Fatalf("envelope keys %v", keys)
		}
		if err := sign.Verify(secret, r.Header.Get("X-Signature"), r.Body, clk.Now()); err != nil {
			t.Fatalf("X-Signature: %v", err)
		}
		if err := sign.VerifyStandard(secret, r.Header, r.Body, clk.Now()); err != nil {
			t.Fatalf("Standard Webhooks: %v", err)
		}
		mustEqual(t, "signed at", r.Header.Get("webhook-timestamp"), strconv.FormatInt(clk.Now().Unix(), 10))
		tampered := bytes.Replace(r.Body, []byte(`"seq":0`), []byte(`"seq":1`), 1)
		if sign.Verify(secret, r.Header.Get("X-Signature"), tampered, clk.Now()) == nil {
			t.Fatal("tampered body verifies")
		}

		row := f.row(ids[0])
		mustEqual(t, "status", row.Status, outbox.Succeeded)
		mustEqual(t, "attempts", row.Attempts, 1)
		mustEqual(t, "webhook", row.WebhookID, wh.ID)
		mustEqual(t, "status code", intp(row.LastStatusCode), "202")
		mustEqual(t, "excerpt", str(row.ResponseExcerpt), `{"ok":true}`)
		if row.LeaseOwner != nil || row.NextAttemptAt != nil || row.LastError != nil {
			t.Fatalf("row %+v", row)
		}
		// The attempt keeps the headers the receiver got, signatures
		// included, and nothing else (the secret is no header).
		as, err := outbox.Attempts(f.ctx, d.DB, f.tid, wh.ID, row.ID)
		if err != nil || len(as) != 1 {
			t.Fatalf("attempts %+v, %v", as, err)
		}
		kept := map[string]string{}
		for _, h := range as[0].Headers() {
			kept[h.Name] = h.Value
		}
		for _, name := range []string{"Content-Type", "User-Agent", "X-Signature", "webhook-id", "webhook-timestamp", "webhook-signature"} {
			if kept[name] == "" || kept[name] != r.Header.Get(name) {
				t.Errorf("kept %s = %q; the receiver got %q", name, kept[name], r.Header.Get(name))
			}
		}
		if len(kept) != 6 {
			t.Errorf("kept headers %v; want the 6 sent (no trace context without tracing)", kept)
		}
		for _, v := range kept {
			if strings.Contains(v, secret) || strings.Contains(v, strings.TrimPrefix(secret, sign.SecretPrefix)) {
				t.Fatalf("a kept header holds the secret: %q", v)
			}
		}
		for _, r := range f.rows() {
			if r.WebhookID == other.ID {
				t.Fatal("a delivery for a registration of another kind")
			}
		}
		// Nothing left to do.
		if n, _ := w.RunOnce(f.ctx); n != 0 {
			t.Fatalf("claimed %d after success", n)
		}
	})
}

func TestRetryScheduleRetryAfterAnd410(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		var code int
		var retryAfter string
		rc.respond = func(w http.ResponseWriter, _ *received) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
			w.Write([]byte(strings.Repeat("e", 5000)))
		}
		wh, secret := f.register(outbox.ActCreated, rc.URL)
		clk := newClock()
		w := f.worker(delivery.WithNow(clk.Now), delivery.WithRand(fixedRand))
		ids := f.emit(outbox.ActCreated, 2, nil, nil)
		ev := ids[0]
		// Keep the second delivery for later so that the 410 cancels it.
		d.Table("deliveries").Where("event_id = ?", ids[1]).Update("next_attempt_at", clk.Now().Add(1000*time.Hour))

		step := func(wantClaimed int) {
			t.Helper()
			n, err := w.RunOnce(f.ctx)
			if err != nil || n != wantClaimed {
				t.Fatalf("RunOnce = %d, %v; want %d", n, err, wantClaimed)
			}
		}
		code = 500
		step(1)
		r := f.row(ev)
		mustEqual(t, "status", r.Status, outbox.Pending)
		mustEqual(t, "attempts", r.Attempts, 1)
		mustEqual(t, "next", r.NextAttemptAt.UTC(), clk.Now().Add(5*time.Second))
		mustEqual(t, "error", str(r.LastError), "target answered 500")
		mustEqual(t, "excerpt length", len(str(r.ResponseExcerpt)), httpclient.ExcerptLimit)

		step(0) // not due yet
		clk.Advance(4 * time.Second)
		step(0)
		clk.Advance(time.Second)
		step(1)
		r = f.row(ev)
		mustEqual(t, "attempts", r.Attempts, 2)
		mustEqual(t, "next", r.NextAttemptAt.UTC(), clk.Now().Add(5*time.Minute))

		// 503 with Retry-After longer than the schedule postpones.
		clk.Set(r.NextAttemptAt.UTC())
		code, retryAfter = 503, "7200"
		step(1)
		r = f.row(ev)
		mustEqual(t, "next after Retry-After", r.NextAttemptAt.UTC(), clk.Now().Add(2*time.Hour))
		// A shorter Retry-After does not hurry the schedule (30m is next).
		clk.Set(r.NextAttemptAt.UTC())
		retryAfter = "1"
		step(1)
		r = f.row(ev)
		mustEqual(t, "next", r.NextAttemptAt.UTC(), clk.Now().Add(2*time.Hour))
		mustEqual(t, "attempts", r.Attempts, 4)

		// Every attempt was signed afresh at its own time.
		reqs := rc.requests()
		mustEqual(t, "requests", len(reqs), 4)
		for i, q := range reqs {
			mustEqual(t, "same event id", q.Env.ID, ev)
			if i > 0 && q.Header.Get("webhook-timestamp") == reqs[i-1].Header.Get("webhook-timestamp") {
				t.Fatal("an attempt reused the previous signature time")
			}
		}
		if err := sign.Verify(secret, reqs[3].Header.Get("X-Signature"), reqs[3].Body, clk.Now()); err != nil {
			t.Fatal(err)
		}

		// 410 disables the registration and cancels its other deliveries.
		clk.Set(r.NextAttemptAt.UTC())
		code, retryAfter = 410, ""
		step(1)
		r = f.row(ev)
		mustEqual(t, "status", r.Status, outbox.Failed)
		mustEqual(t, "code", intp(r.LastStatusCode), "410")
		if r.NextAttemptAt != nil {
			t.Fatal("next attempt after 410")
		}
		mustEqual(t, "other delivery", f.row(ids[1]).Status, outbox.Cancelled)
		got, err := f.store.Get(f.ctx, f.owner(), wh.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Active || got.DisabledReason == nil || !strings.Contains(*got.DisabledReason, "410") {
			t.Fatalf("registration after 410: active %v reason %s", got.Active, str(got.DisabledReason))
		}
		// The audit log has it, by the service, in the disabling's transaction.
		var actors []string
		if err := d.Table("audit_log").Where("action = ? AND target_type = 'webhook' AND target_id = ?", "webhook.disabled",
			fmt.Sprint(wh.ID)).Pluck("actor_type", &actors).Error; err != nil {
			t.Fatal(err)
		}
		if len(actors) != 1 || actors[0] != "system" {
			t.Fatalf("audit records of the disabling: %v", actors)
		}
		// A disabled registration gets nothing new.
		f.emit(outbox.ActCreated, 1, nil, nil)
		clk.Advance(1000 * time.Hour)
		step(0)
	})
}

func TestAttemptsExhausted(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		rc.respond = func(w http.ResponseWriter, _ *received) { w.WriteHeader(302); w.Header().Set("Location", "/x") }
		f.register(outbox.ActCreated, rc.URL)
		clk := newClock()
		w := f.worker(delivery.WithNow(clk.Now), delivery.WithRand(fixedRand))
		ev := f.emit(outbox.ActCreated, 1, nil, nil)[0]
		start := clk.Now()
		for i := 1; i <= 8; i++ {
			if n, err := w.RunOnce(f.ctx); err != nil || n != 1 {
				t.Fatalf("attempt %d: RunOnce = %d, %v", i, n, err)
			}
			r := f.row(ev)
			mustEqual(t, "attempts", r.Attempts, i)
			if i < 8 {
				mustEqual(t, "status", r.Status, outbox.Pending)
				clk.Set(r.NextAttemptAt.UTC())
			} else {
				mustEqual(t, "status", r.Status, outbox.Failed)
				if !strings.Contains(str(r.LastError), "exhausted") {
					t.Fatalf("last error %q", str(r.LastError))
				}
			}
		}
		// 5s+5m+30m+2h+5h+10h+10h without jitter.
		mustEqual(t, "span", clk.Now().Sub(start), 27*time.Hour+35*time.Minute+5*time.Second)
		mustEqual(t, "requests", len(rc.requests()), 8)
		clk.Advance(100 * time.Hour)
		if n, _ := w.RunOnce(f.ctx); n != 0 {
			t.Fatal("a failed delivery was claimed again")
		}
	})
}

func TestFetchDataStopsAtExpiresAt(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		rc.respond = func(w http.ResponseWriter, _ *received) { w.WriteHeader(500) }
		f.register(outbox.ActFetchData, rc.URL)
		clk := newClock()
		w := f.worker(delivery.WithNow(clk.Now), delivery.WithRand(fixedRand))
		expires := clk.Now().Add(10 * time.Minute)
		ev := f.emit(outbox.ActFetchData, 1, &expires, nil)[0]

		w.RunOnce(f.ctx) // fails; next in 5s
		clk.Set(f.row(ev).NextAttemptAt.UTC())
		w.RunOnce(f.ctx) // fails; next in 5m, still before expires_at
		r := f.row(ev)
		mustEqual(t, "status", r.Status, outbox.Pending)
		clk.Set(r.NextAttemptAt.UTC())
		w.RunOnce(f.ctx) // fails; 30m would be past expires_at: stop
		r = f.row(ev)
		mustEqual(t, "status", r.Status, outbox.Failed)
		mustEqual(t, "attempts", r.Attempts, 3)
		if !strings.Contains(str(r.LastError), "expires_at") || r.NextAttemptAt != nil {
			t.Fatalf("row %+v, error %s", r, str(r.LastError))
		}

		// An event already expired when its turn comes is not sent at all.
		past := clk.Now().Add(time.Minute)
		ev2 := f.emit(outbox.ActFetchData, 1, &past, nil)[0]
		clk.Advance(2 * time.Minute)
		if n, _ := w.RunOnce(f.ctx); n != 1 {
			t.Fatal("expired event not claimed")
		}
		r = f.row(ev2)
		mustEqual(t, "status", r.Status, outbox.Failed)
		mustEqual(t, "attempts", r.Attempts, 0)
		mustEqual(t, "requests", len(rc.requests()), 3)
	})
}

func TestSSRFBlockedTargetsAreLoggedAsBlocked(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, true) // a real listener on loopback that must not be reached
		port := rc.Listener.Addr().(*net.TCPAddr).Port
		p := strconv.Itoa(port)
		targets := []string{
			"https://127.0.0.1:" + p + "/",
			"https://10.0.0.1:" + p + "/",
			"https://169.254.169.254/latest/meta-data",
			"https://[::1]:" + p + "/",
			"https://loopback.example.test:" + p + "/",
		}
		for _, tg := range targets {
			f.register(outbox.ActCreated, tg)
		}
		f.cfg.WebhookAllowPrivate = false // the production setting
		w := f.worker(delivery.WithClientOptions(httpclient.Options{
			Timeout: 3 * time.Second,
			LookupNetIP: func(_ context.Context, _, host string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			},
		}))
		f.emit(outbox.ActCreated, 1, nil, nil)
		if n, err := w.RunOnce(f.ctx); err != nil || n != len(targets) {
			t.Fatalf("RunOnce = %d, %v", n, err)
		}
		for _, r := range f.rows() {
			if r.Status != outbox.Failed || str(r.LastError) != "target address not allowed" || r.Attempts != 1 || r.LastStatusCode != nil || r.NextAttemptAt != nil {
				t.Errorf("webhook %d: status %s error %q attempts %d", r.WebhookID, r.Status, str(r.LastError), r.Attempts)
			}
		}
		if n := len(rc.requests()); n != 0 {
			t.Fatalf("the guarded client reached the loopback receiver %d times", n)
		}
	})
}

func TestIneligibleRegistrationsAreCancelled(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		inactive, _ := f.register(outbox.ActCreated, rc.URL+"/a")
		f.register(outbox.ActCreated, rc.URL+"/b")
		ev := f.emit(outbox.ActCreated, 1, nil, nil)[0]
		// After the event was written: one registration deactivated, then the
		// registering user removed (nobody has access any more).
		d.Table("webhooks").Where("tenant_id = ? AND id = ?", f.tid, inactive.ID).Update("active", false)
		w := f.worker()
		if n, _ := w.RunOnce(f.ctx); n != 2 {
			t.Fatalf("claimed %d", n)
		}
		for _, r := range f.rows() {
			want := outbox.Succeeded
			if r.WebhookID == inactive.ID {
				want = outbox.Cancelled
			}
			mustEqual(t, "status", r.Status, want)
		}
		ev2 := f.emit(outbox.ActCreated, 1, nil, nil)[0]
		d.Exec("DELETE FROM users WHERE tenant_id = ?", f.tid)
		w.RunOnce(f.ctx)
		r := f.row(ev2)
		mustEqual(t, "status", r.Status, outbox.Cancelled)
		mustEqual(t, "requests", len(rc.requests()), 1)
		_ = ev
	})
}

// TestRotationOverlapSignsWithBothSecrets: for each overlap a rotation
// may choose, the registration keeps the previous secret until rotation +
// overlap (none for "now"), every delivery during the overlap carries a v1
// signature by each secret in both schemes, and after it (or at once for
// "now") only the new secret signs.
func TestRotationOverlapSignsWithBothSecrets(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		for _, overlap := range registry.RotationOverlaps {
			t.Run(overlap.String(), func(t *testing.T) {
				rc := newReceiver(t, false)
				wh, oldSecret := f.register(outbox.ActCreated, rc.URL)
				// The next overlap's events go to its registration alone.
				off := false
				t.Cleanup(func() {
					if _, err := f.store.Update(f.ctx, f.owner(), wh.ID, registry.Patch{Active: &off}); err != nil {
						t.Error(err)
					}
				})
				clk := newClock()
				before := time.Now().UTC().Truncate(time.Microsecond)
				rotated, newSecret, err := f.store.Rotate(f.ctx, f.owner(), wh.ID, overlap)
				if err != nil {
					t.Fatal(err)
				}
				after := time.Now().UTC()
				if overlap == 0 {
					if rotated.PreviousSecretExpiresAt != nil || rotated.PreviousSecretCiphertext != nil {
						t.Fatalf("now: previous secret kept until %v", rotated.PreviousSecretExpiresAt)
					}
				} else if at := rotated.PreviousSecretExpiresAt; at == nil || at.Before(before.Add(overlap)) || at.After(after.Add(overlap)) {
					t.Fatalf("previous secret expires at %v, want rotation + %v (%v)", at, overlap, before.Add(overlap))
				}
				w := f.worker(delivery.WithNow(clk.Now))
				f.emit(outbox.ActCreated, 1, nil, nil)
				w.RunOnce(f.ctx)
				r := rc.requests()[0]
				sig := r.Header.Get("X-Signature")
				want := 2
				if overlap == 0 {
					want = 1
				}
				mustEqual(t, "v1 count", strings.Count(sig, "v1="), want)
				mustEqual(t, "standard count", strings.Count(r.Header.Get("webhook-signature"), "v1,"), want)
				if err := sign.Verify(newSecret, sig, r.Body, clk.Now()); err != nil {
					t.Fatal(err)
				}
				if err := sign.VerifyStandard(newSecret, r.Header, r.Body, clk.Now()); err != nil {
					t.Fatal(err)
				}
				oldErr := sign.Verify(oldSecret, sig, r.Body, clk.Now())
				if overlap > 0 && oldErr != nil {
					t.Fatalf("during the overlap the old secret does not sign: %v", oldErr)
				}
				if overlap == 0 {
					if oldErr == nil {
						t.Fatal("the old secret still signs after a rotation with no overlap")
					}
					return
				}
				// Just before the end both still sign; just after only the new one.
				clk.Set(rotated.PreviousSecretExpiresAt.Add(-time.Minute))
				f.emit(outbox.ActCreated, 1, nil, nil)
				w.RunOnce(f.ctx)
				mustEqual(t, "v1 count before the end", strings.Count(rc.requests()[1].Header.Get("X-Signature"), "v1="), 2)
				clk.Set(rotated.PreviousSecretExpiresAt.Add(time.Second))
				f.emit(outbox.ActCreated, 1, nil, nil)
				w.RunOnce(f.ctx)
				r = rc.requests()[2]
				mustEqual(t, "v1 count after the end", strings.Count(r.Header.Get("X-Signature"), "v1="), 1)
				if err := sign.Verify(oldSecret, r.Header.Get("X-Signature"), r.Body, clk.Now()); err == nil {
					t.Fatal("the old secret still signs after the overlap")
				}
				if err := sign.Verify(newSecret, r.Header.Get("X-Signature"), r.Body, clk.Now()); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

// waitFor waits for an event id on ch, failing after a generous bound (the
// bound is a safety net for a broken build, not a timing assumption).
func waitFor(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a delivery")
		return ""
	}
}

func TestNotifierWakesWorkerWithoutPolling(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		rc.arrived = make(chan string, 10)
		f.register(outbox.ActCreated, rc.URL)
		w := f.worker(delivery.WithPollInterval(time.Hour))
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())
		// The initial claim finds nothing; from now on only a wake-up helps.
		for i := 0; i < 3; i++ {
			ev := f.emit(outbox.ActCreated, 1, nil, w.Notifier())[0]
			mustEqual(t, "delivered", waitFor(t, rc.arrived), ev)
		}
	})
}

func TestListenNotifyWakesOtherReplica(t *testing.T) {
	f := newFixture(t, testdb.Postgres(t))
	rc := newReceiver(t, false)
	rc.arrived = make(chan string, 10)
	f.register(outbox.ActCreated, rc.URL)
	w := f.worker(delivery.WithPollInterval(time.Hour))
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	// No in-process notifier: only the NOTIFY sent at commit can wake it.
	for i := 0; i < 3; i++ {
		ev := f.emit(outbox.ActCreated, 1, nil, nil)[0]
		mustEqual(t, "delivered", waitFor(t, rc.arrived), ev)
	}
}

func TestStopReleasesAttemptsAfterGrace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		rc.arrived = make(chan string, 10)
		release := make(chan struct{})
		rc.hold = func(string) { <-release }
		f.register(outbox.ActCreated, rc.URL)
		w := f.worker(delivery.WithPollInterval(time.Hour))
		ev := f.emit(outbox.ActCreated, 1, nil, nil)[0]
		w.Start(context.Background())
		waitFor(t, rc.arrived) // the attempt is in flight
		r := f.row(ev)
		if r.Status != outbox.Delivering || str(r.LeaseOwner) != w.Owner() || r.LeaseExpiresAt == nil {
			t.Fatalf("in flight: %+v", r)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no grace left
		w.Stop(ctx)
		r = f.row(ev)
		if r.Status != outbox.Pending || r.LeaseOwner != nil || r.LeaseExpiresAt != nil || r.Attempts != 0 {
			t.Fatalf("after stop: %+v", r)
		}
		// Another worker picks it up at once.
		go func() {
			for range rc.arrived {
			}
		}()
		close(release)
		w2 := f.worker()
		if n, _ := w2.RunOnce(f.ctx); n != 1 {
			t.Fatal("released delivery not claimable")
		}
		mustEqual(t, "status", f.row(ev).Status, outbox.Succeeded)
	})
}

func TestStopFinishesAttemptsWithinGrace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		rc.arrived = make(chan string, 10)
		release := make(chan struct{})
		rc.hold = func(string) { <-release }
		f.register(outbox.ActCreated, rc.URL)
		w := f.worker(delivery.WithPollInterval(time.Hour))
		ev := f.emit(outbox.ActCreated, 1, nil, nil)[0]
		w.Start(context.Background())
		waitFor(t, rc.arrived)
		stopped := make(chan struct{})
		go func() { w.Stop(context.Background()); close(stopped) }()
		select {
		case <-stopped:
			t.Fatal("Stop returned with an attempt in flight")
		default:
		}
		close(release)
		<-stopped
		r := f.row(ev)
		mustEqual(t, "status", r.Status, outbox.Succeeded)
		mustEqual(t, "attempts", r.Attempts, 1)
	})
}

func TestWrongGlobalSecretPostponesWithoutFailing(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		f.register(outbox.ActCreated, rc.URL)
		ev := f.emit(outbox.ActCreated, 1, nil, nil)[0]
		clk := newClock()
		f.cfg.Secret = "another-global-secret-of-a-misconfigured-replica"
		if n, _ := f.worker(delivery.WithNow(clk.Now)).RunOnce(f.ctx); n != 1 {
			t.Fatal("not claimed")
		}
		r := f.row(ev)
		if r.Status != outbox.Pending || r.Attempts != 0 || r.LeaseOwner != nil || !r.NextAttemptAt.UTC().Equal(clk.Now().Add(5*time.Minute)) {
			t.Fatalf("row %+v", r)
		}
		mustEqual(t, "requests", len(rc.requests()), 0)
		// A correctly configured replica delivers it when it is due.
		f.cfg.Secret = globalSecret
		clk.Advance(5 * time.Minute)
		f.worker(delivery.WithNow(clk.Now)).RunOnce(f.ctx)
		mustEqual(t, "status", f.row(ev).Status, outbox.Succeeded)
	})
}
