package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

var logRowRE = regexp.MustCompile(`<tr data-id="([0-9a-f-]{36})">`)

// listedDeliveries are the delivery ids of the log's table on a page, in order.
func listedDeliveries(body string) []string {
	var out []string
	for _, m := range logRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestDeliveryLogFilters: the webhook page's delivery log, filtered by a
// GET form: each filter lists exactly its deliveries; the older/newer
// links page through the log by cursor, keeping the filter; bad input is
// a message beside the field (400), never a 500; a member sees only their
// own registrations' deliveries and another tenant's id is 404. The test
// event sends the chosen type's catalog example, and an unknown type is
// refused with a message.
func TestDeliveryLogFilters(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme, other := newOrg(t, env, "acme"), newOrg(t, env, "other")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
			foreign := other.foreignWebhook(t)
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			admin := acme.client(t)
			admin.login(acme.admin)

			page := admin.do("GET", path, nil)
			// The default: webhook.test, 26 more (more than a page).
			for range 26 {
				if r := admin.do("POST", path+"/test", url.Values{"csrf_token": {csrf(t, page.body)}}); r.code != http.StatusSeeOther {
					t.Fatalf("test: %d", r.code)
				}
			}
			// One fails: claimed and answered 500.
			now := time.Now().UTC().Add(time.Second)
			cs, err := outbox.Claim(context.Background(), env.DB, outbox.ClaimRequest{Owner: "t", N: 1, EndpointCap: 1, Now: now, LeaseUntil: now.Add(time.Minute)})
			if err != nil || len(cs) != 1 {
				t.Fatalf("claim: %d, %v", len(cs), err)
			}
			msg := "target answered 500"
			if held, err := outbox.Finish(context.Background(), env.DB, cs[0], "t",
				outbox.Update{Status: outbox.Failed, LastError: &msg, Attempt: &outbox.Attempt{Number: 1, At: now, StatusCode: 500}}, now, nil); err != nil || !held {
				t.Fatalf("finish: %v %v", held, err)
			}
			failed := cs[0].ID

			// A test of a chosen type carries the catalog's example.
			if !strings.Contains(page.body, `<option value="act.created">`) || !strings.Contains(page.body, `<option value="webhook.test">`) {
				t.Fatalf("no choice of test event type: %s", page.body)
			}
			r := admin.do("POST", path+"/test", url.Values{"csrf_token": {csrf(t, page.body)}, "event": {outbox.ActCreated}})
			if r.code != http.StatusSeeOther {
				t.Fatalf("test act.created: %d %s", r.code, r.body)
			}
			ds := acme.deliveries(t, wh.Id)
			if len(ds) != 25 || ds[0].Event != models.DeliveryEventKind(outbox.ActCreated) {
				t.Fatalf("after the act.created test: %d, %+v", len(ds), ds[0])
			}
			created := ds[0].Id.String()
			var payload string
			if err := env.DB.Table("events").Select("payload").Where("id = ?", ds[0].EventId.String()).Scan(&payload).Error; err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(payload, "Annual credit review") {
				t.Fatalf("the act.created test does not carry the catalog's example: %s", payload)
			}
			// Example data describes nothing that happened: the events API
			// does not offer it (TestExampleEventsAreNotListed).
			acme.Do("GET", "/api/1.0/events/"+ds[0].EventId.String(), acme.admin.token, nil).Status(t, http.StatusNotFound)
			r = admin.do("POST", path+"/test", url.Values{"csrf_token": {csrf(t, page.body)}, "event": {"act.exploded"}})
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, "The event type is unknown.") {
				t.Fatalf("unknown test type: %d", r.code)
			}
			first := admin.do("GET", path, nil)
			rows := listedDeliveries(first.body)
			if first.code != http.StatusOK || len(rows) != 25 || strings.Contains(first.body, `id="newer"`) {
				t.Fatalf("first page: %d, %d rows", first.code, len(rows))
			}
			older := regexp.MustCompile(`href="([^"]+)" id="older"`).FindStringSubmatch(first.body)
			if older == nil {
				t.Fatal("no link to older deliveries")
			}
			second := admin.do("GET", path+html.UnescapeString(older[1]), nil)
			rest := listedDeliveries(second.body)
			if second.code != http.StatusOK || len(rest) != 2 || strings.Contains(second.body, `id="older"`) || !strings.Contains(second.body, `id="newer"`) {
				t.Fatalf("second page: %d, %v", second.code, rest)
			}
			seen := map[string]bool{}
			for _, id := range append(rows, rest...) {
				if seen[id] {
					t.Fatalf("%s listed twice", id)
				}
				seen[id] = true
			}
			if len(seen) != 27 || !seen[created] || !seen[failed] {
				t.Fatalf("%d deliveries paged", len(seen))
			}

			for q, want := range map[string][]string{
				"?status=failed":                             {failed},
				"?event=act.created":                         {created},
				"?event=act.created&status=pending":          {created},
				"?from=2000-01-01T00:00&to=2000-01-02T00:00": nil,
			} {
				r := admin.do("GET", path+q, nil)
				if got := listedDeliveries(r.body); r.code != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: %d %v; want %v", q, r.code, got, want)
				}
				if want == nil && !strings.Contains(r.body, "No delivery matches the filter.") {
					t.Errorf("%s: no word for an empty result", q)
				}
			}
			// From now on (to the minute) the range holds them all, paged.
			from := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")
			if r := admin.do("GET", path+"?from="+from, nil); len(listedDeliveries(r.body)) != 25 || !strings.Contains(r.body, "from="+url.QueryEscape(from)) {
				t.Errorf("a range: %d rows, or the older link drops the filter", len(listedDeliveries(r.body)))
			}

			// Bad input: a sentence beside the field, 400, nothing listed.
			for q, want := range map[string]string{
				"?status=lost":    `id="status-error">Choose a status from the list.`,
				"?event=act.boom": `id="event-error">Choose an event type from the list.`,
				"?from=yesterday": `id="from-error">Give a date and time`,
				"?from=2026-03-02T10:00&to=2026-03-01T10:00": `id="to-error">Must be later than the start of the range.`,
				"?after=nonsense": `id="page-error">This page link is broken`,
				"?after=00000000-0000-0000-0000-000000000001": `id="page-error">This page link is broken`,
				"?after=" + created + "&before=" + failed:     `id="page-error">This page link is broken`,
			} {
				r := admin.do("GET", path+q, nil)
				if r.code != http.StatusBadRequest || !strings.Contains(r.body, want) || len(listedDeliveries(r.body)) != 0 ||
					!strings.Contains(r.body, "The deliveries were not filtered") {
					t.Errorf("%s: %d; want 400 with %q", q, r.code, want)
				}
			}

			// Visibility: a member sees only their own registrations'
			// deliveries; another tenant's id is not found.
			member := acme.client(t)
			member.login(acme.member)
			if r := member.do("GET", path+"?status=failed", nil); r.code != http.StatusNotFound {
				t.Fatalf("member, an admin's log: %d", r.code)
			}
			own := acme.webhook(t, acme.member, "https://127.0.0.1:9/own")
			ownPath := fmt.Sprintf("/console/webhooks/%d", own.Id)
			p := member.do("GET", ownPath, nil)
			if r := member.do("POST", ownPath+"/test", url.Values{"csrf_token": {csrf(t, p.body)}}); r.code != http.StatusSeeOther {
				t.Fatalf("member test: %d", r.code)
			}
			if r := member.do("GET", ownPath+"?event=webhook.test", nil); r.code != http.StatusOK || len(listedDeliveries(r.body)) != 1 {
				t.Fatalf("member, own log: %d %d", r.code, len(listedDeliveries(r.body)))
			}
			if r := member.do("GET", ownPath+"?after="+created, nil); r.code != http.StatusBadRequest {
				t.Fatalf("member, another log's delivery as the cursor: %d", r.code)
			}
			if r := admin.do("GET", fmt.Sprintf("/console/webhooks/%d?status=failed", foreign), nil); r.code != http.StatusNotFound {
				t.Fatalf("another tenant's id: %d", r.code)
			}
		})
	}
}

// TestEndpointHealthPage: the webhook page shows the attempts of the last
// 24 hours and 7 days as SVG charts with a title, a description and a
// text summary, and the circuit breaker in words: after three failures in
// a row it is open, with the last failure's reason, when it retries and
// when the registration would be disabled.
func TestEndpointHealthPage(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			admin := acme.client(t)
			admin.login(acme.admin)
			page := admin.do("GET", path, nil)
			for _, want := range []string{
				`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 480 120" width="100%" height="140" preserveAspectRatio="xMinYMid meet" role="img" aria-labelledby="rate-day-title rate-day-desc"`,
				`<title id="rate-day-title">Success rate, last 24 hours</title>`,
				`<title id="latency-week-title">Latency, last 7 days</title>`,
				"No attempts in the last 24 hours.", `<span class="badge ok">closed</span> Delivering normally.`,
			} {
				if !strings.Contains(page.body, want) {
					t.Fatalf("a new registration's page lacks %q", want)
				}
			}
			// Three attempts: 2xx in 120 ms, then 500 twice (300, 600 ms).
			for i, code := range []int{202, 500, 503} {
				if r := admin.post(path, path+"/test"); r.code != http.StatusSeeOther {
					t.Fatalf("test: %d", r.code)
				}
				now := time.Now().UTC().Add(time.Second)
				cs, err := outbox.Claim(context.Background(), env.DB, outbox.ClaimRequest{Owner: "t", N: 1, EndpointCap: 1, Now: now, LeaseUntil: now.Add(time.Minute)})
				if err != nil || len(cs) != 1 {
					t.Fatalf("claim: %d, %v", len(cs), err)
				}
				st := outbox.Failed
				if code < 300 {
					st = outbox.Succeeded
				}
				a := &outbox.Attempt{Number: 1, At: now, StatusCode: code, Duration: time.Duration([]int{120, 300, 600}[i]) * time.Millisecond}
				if held, err := outbox.Finish(context.Background(), env.DB, cs[0], "t", outbox.Update{Status: st, Attempt: a}, now, nil); err != nil || !held {
					t.Fatalf("finish: %v %v", held, err)
				}
			}
			// The breaker: three failures in a row open the circuit.
			ctx := tenant.NewContext(context.Background(), acme.Tenant)
			for range 3 {
				if _, err := outbox.RecordHealth(ctx, env.DB, acme.Tenant.ID, wh.Id, false, "target answered 503", time.Now().UTC()); err != nil {
					t.Fatal(err)
				}
			}
			page = admin.do("GET", path, nil)
			for _, want := range []string{
				"3 attempts in the last 24 hours, 33.3% succeeded (1).", "Mean 340 ms per attempt, slowest 600 ms.",
				"3 attempts in the last 7 days, 33.3% succeeded (1).",
				`<span class="badge bad">open</span> Paused after 3 failed attempts in a row`,
				`<dd id="breaker-reason">target answered 503</dd>`, `<dt>Next attempt</dt>`, `<dt>Disabled at</dt>`,
			} {
				if !strings.Contains(page.body, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			if n := strings.Count(page.body, `<rect `); n < 2*(24+28)+2 || n > 2*(24+28)+4 {
				// One bar per interval in each chart, and each latency
				// chart's mark of the slowest above the interval with
				// attempts (two, if the attempts straddle an hour).
				t.Errorf("%d bars", n)
			}
		})
	}
}
