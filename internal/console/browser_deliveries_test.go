package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// headerLog is a receiver that answers 202 and keeps the headers of
// every request.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen = append(h.seen, r.Header.Clone())
	h.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (h *headerLog) got() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.seen...)
}

// TestBrowserTestEventHeadersAndRedeliver drives the delivery flow in
// Chromium with the delivery workers running: a member creates a webhook,
// sends a test event of a chosen type (act.updated, not the default), opens
// the delivery once it was attempted and finds the request headers the
// receiver got (both signature schemes among them), redelivers it, and
// then finds both attempts, each with its own headers. The pages are
// checked at 1280 and 390 px; a console error fails the test.
func TestBrowserTestEventHeadersAndRedeliver(t *testing.T) {
	browsertest.Chromium(t)
	rcv := &headerLog{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	env := newEnv(t)
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.App.Stop)
	acme := newOrg(t, env, "acme")

	b, base := signIn(t, acme, acme.member, "/console/webhooks")
	b.Submit("#new-webhook")
	b.Do("choose act.updated", chromedp.Click(chromedp.CSS(`#event-act\.updated`)))
	b.Fill("#target", srv.URL+"/hook")
	b.Submit("#create")
	if !strings.Contains(b.Text("#notice"), "was created") {
		t.Fatalf("after create: %q", b.Text("#notice"))
	}
	hook := b.Path()
	if !strings.Contains(b.Text("#health"), "Endpoint health") || b.Count("figure.chart svg[role=img] > title") != 4 {
		t.Fatalf("no health charts: %d", b.Count("figure.chart svg[role=img] > title"))
	}
	b.Do("choose the test's type", chromedp.SetValue(chromedp.CSS(`#test-event`), "act.updated"))
	b.Submit("#test")
	if !strings.Contains(b.Text("#notice"), "A test event was queued (act.updated, delivery") {
		t.Fatalf("after test: %q", b.Text("#notice"))
	}
	b.Submit("#deliveries a.detail")
	detail := b.Path()
	attempts := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for b.Count("#attempts tbody tr") < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d attempts after 30 s; want %d", b.Count("#attempts tbody tr"), n)
			}
			time.Sleep(200 * time.Millisecond)
			b.Open(base + detail)
		}
	}
	attempts(1)
	if !strings.Contains(b.Text("#delivery"), "act.updated") {
		t.Fatalf("delivery page: %q", b.Text("#delivery"))
	}
	seen := rcv.got()
	if len(seen) != 1 {
		t.Fatalf("the receiver got %d requests", len(seen))
	}
	for _, name := range []string{"X-Signature", "webhook-id", "webhook-timestamp", "webhook-signature", "Content-Type", "User-Agent"} {
		if v := seen[0].Get(name); v == "" || !strings.Contains(b.Text("#headers-1"), v) || !strings.Contains(b.Text("#headers-1"), name) {
			t.Errorf("attempt 1 headers lack %s: %q", name, v)
		}
	}
	b.Shoot("delivery-headers")
	b.Submit("#redeliver")
	if !strings.Contains(b.Text("#notice"), "earlier attempts stay listed") {
		t.Fatalf("after redeliver: %q", b.Text("#notice"))
	}
	attempts(2)
	seen = rcv.got()
	if len(seen) != 2 || b.Count("#attempts tbody tr") != 2 {
		t.Fatalf("after redeliver: %d requests, %d attempts listed", len(seen), b.Count("#attempts tbody tr"))
	}
	// Each attempt keeps its own signatures: same event id, new timestamp
	// and signature when the second differs in time.
	for i, h := range seen {
		sel := []string{"#headers-1", "#headers-2"}[i]
		if !strings.Contains(b.Text(sel), h.Get("X-Signature")) || !strings.Contains(b.Text(sel), h.Get("webhook-id")) {
			t.Errorf("%s does not show attempt %d's signature", sel, i+1)
		}
	}
	b.Shoot("delivery-two-attempts")
	b.Open(base + hook + "?event=act.updated#log")
	if b.Count("#deliveries tbody tr") != 1 || !strings.Contains(b.Text("#rate-day"), "2 attempts in the last 24 hours, 100% succeeded (2).") {
		t.Fatalf("filtered log: %d rows; chart %q", b.Count("#deliveries tbody tr"), b.Text("#rate-day figcaption"))
	}
	b.Shoot("webhook-health")
}
