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

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// TestDestructiveActionsAskFirst: deleting, disabling and rotating a
// webhook and deactivating a user answer the page's form with a
// confirmation naming what will happen (the pending deliveries a delete
// cancels), change nothing until that page's form is sent, and take no
// other form's token (the page's own again, or another action's
// confirmation). Roles are refused before anything is asked. A deactivated
// user is reactivated (recorded in the audit log as the admin's action)
// and signs in again.
func TestDestructiveActionsAskFirst(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			exists := func() bool {
				return acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.admin.token, nil).Code == http.StatusOK
			}
			admin := acme.client(t)
			admin.login(acme.admin)
			for range 2 {
				if r := admin.post(path, path+"/test"); r.code != http.StatusSeeOther {
					t.Fatalf("test: %d", r.code)
				}
			}

			page, delTok := admin.ask(path, path+"/delete")
			body := html.UnescapeString(page.body)
			for _, want := range []string{"Delete webhook", "https://127.0.0.1:9/hook", "2 pending deliveries will be cancelled", `href="` + path + `"`} {
				if !strings.Contains(body, want) {
					t.Errorf("the delete confirmation does not say %q", want)
				}
			}
			if !exists() || len(acme.deliveries(t, wh.Id)) != 2 {
				t.Fatal("asking deleted something")
			}
			// The registration page's token again only asks again.
			admin.ask(path, path+"/delete")
			// Another action's confirmation token does not act here.
			_, disTok := admin.ask(path, path+"/disable")
			if r := admin.do("POST", path+"/delete", url.Values{"csrf_token": {disTok}}); r.code != http.StatusForbidden || !exists() {
				t.Fatalf("delete with the disable confirmation's token: %d, exists %v", r.code, exists())
			}
			// The viewer is refused before any question.
			viewer := acme.client(t)
			viewer.login(acme.viewer)
			if r := viewer.post(path, path+"/delete"); r.code != http.StatusForbidden || strings.Contains(r.body, "confirm-form") {
				t.Fatalf("viewer delete: %d", r.code)
			}

			r := admin.confirm(path, path+"/rotate")
			if r.code != http.StatusSeeOther || r.location != path {
				t.Fatalf("rotate: %d %q", r.code, r.location)
			}
			if got := admin.do("GET", path, nil).body; !strings.Contains(got, `id="secret"`) {
				t.Error("no secret after the confirmed rotation")
			}

			if r := admin.do("POST", path+"/delete", url.Values{"csrf_token": {delTok}}); r.code != http.StatusSeeOther || r.location != "/console/webhooks" {
				t.Fatalf("confirmed delete: %d %q", r.code, r.location)
			}
			if exists() {
				t.Fatal("still there after the confirmed delete")
			}
			if got := admin.do("GET", "/console/webhooks", nil).body; !strings.Contains(got, fmt.Sprintf("Webhook %d was deleted.", wh.Id)) {
				t.Error("no notice after the delete")
			}

			// Users: deactivate asks, then acts; reactivate undoes it.
			page, _ = admin.ask("/console/users", fmt.Sprintf("/console/users/%d/deactivate", acme.member.id))
			if !strings.Contains(html.UnescapeString(page.body), acme.member.email+" can no longer sign in") {
				t.Error("the deactivation confirmation does not name the user")
			}
			if acme.user(t, acme.member.id).DeactivatedAt != nil {
				t.Fatal("asking deactivated the user")
			}
			if r := admin.confirm("/console/users", fmt.Sprintf("/console/users/%d/deactivate", acme.member.id)); r.code != http.StatusSeeOther {
				t.Fatalf("confirmed deactivate: %d", r.code)
			}
			if acme.user(t, acme.member.id).DeactivatedAt == nil {
				t.Fatal("not deactivated")
			}
			if r := viewer.post(path, fmt.Sprintf("/console/users/%d/reactivate", acme.member.id)); r.code != http.StatusForbidden {
				t.Fatalf("viewer reactivate: %d", r.code)
			}
			if r := admin.post("/console/users", fmt.Sprintf("/console/users/%d/reactivate", acme.member.id)); r.code != http.StatusSeeOther {
				t.Fatalf("reactivate: %d", r.code)
			}
			if acme.user(t, acme.member.id).DeactivatedAt != nil {
				t.Fatal("still deactivated")
			}
			// Recorded once, by the signed-in admin.
			r = admin.do("GET", "/console/audit?"+url.Values{"action": {"user.reactivated"}}.Encode(), nil)
			if r.code != 200 || strings.Count(r.body, "<code>user.reactivated</code>") != 1 ||
				!strings.Contains(r.body, fmt.Sprintf("user %d", acme.member.id)) || !strings.Contains(r.body, fmt.Sprintf("user %d<", acme.admin.id)) {
				t.Fatalf("reactivations: %d\n%s", r.code, r.body)
			}
			if got := admin.do("GET", "/console/users", nil).body; !strings.Contains(html.UnescapeString(got), acme.member.email+" is active again") {
				t.Error("no notice after the reactivation")
			}
			acme.client(t).login(acme.member)
		})
	}
}

// TestDeliveryPageKeepsEveryAttempt: a delivery's page shows its event id,
// payload and every attempt in order; redelivering it twice from the
// console keeps all three attempts. A member cannot open another's
// delivery; a viewer reads it without a Redeliver button.
func TestDeliveryPageKeepsEveryAttempt(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			admin := acme.client(t)
			admin.login(acme.admin)
			if r := admin.post(path, path+"/test"); r.code != http.StatusSeeOther {
				t.Fatalf("test: %d", r.code)
			}
			ds := acme.deliveries(t, wh.Id)
			if len(ds) != 1 {
				t.Fatalf("%d deliveries", len(ds))
			}
			detail := path + "/deliveries/" + ds[0].Id.String()
			// What a worker does: claim the delivery, try it, record the answer.
			attempt := func(code int) {
				t.Helper()
				now := time.Now().UTC().Add(time.Second)
				cs, err := outbox.Claim(context.Background(), env.DB, outbox.ClaimRequest{Owner: "t", N: 1, EndpointCap: 1, Now: now, LeaseUntil: now.Add(time.Minute)})
				if err != nil || len(cs) != 1 {
					t.Fatalf("claim: %d, %v", len(cs), err)
				}
				msg := fmt.Sprintf("target answered %d", code)
				u := outbox.Update{Status: outbox.Failed, LastError: &msg, Attempt: &outbox.Attempt{Number: cs[0].Attempts + 1, At: now, StatusCode: code, Excerpt: fmt.Sprintf("answer %d", code)}}
				if held, err := outbox.Finish(context.Background(), env.DB, cs[0], "t", u, now, nil); err != nil || !held {
					t.Fatalf("finish: %v %v", held, err)
				}
			}
			attempt(500)
			for _, code := range []int{502, 503} {
				r := admin.post(detail, detail+"/redeliver")
				if r.code != http.StatusSeeOther || r.location != detail {
					t.Fatalf("redeliver: %d %q", r.code, r.location)
				}
				attempt(code)
			}
			page := admin.do("GET", detail, nil)
			if page.code != http.StatusOK || !strings.Contains(page.body, ds[0].EventId.String()) || !strings.Contains(page.body, "A test event from finsvc") {
				t.Fatalf("delivery page: %d", page.code)
			}
			rows := regexp.MustCompile(`<td class="n">(\d+)</td>\s*<td>[^<]+</td>\s*<td class="code">(\d+)</td>`).FindAllStringSubmatch(page.body, -1)
			var got []string
			for _, m := range rows {
				got = append(got, m[1]+":"+m[2])
			}
			if strings.Join(got, " ") != "1:500 2:502 3:503" {
				t.Fatalf("attempts listed: %v; want 1:500 2:502 3:503", got)
			}
			if !strings.Contains(page.body, `href="`+detail+`"`) && !strings.Contains(admin.do("GET", path, nil).body, `href="`+detail+`"`) {
				t.Error("the delivery log does not link to the delivery")
			}
			member := acme.client(t)
			member.login(acme.member)
			if r := member.do("GET", detail, nil); r.code != http.StatusNotFound {
				t.Fatalf("member, another's delivery: %d", r.code)
			}
			viewer := acme.client(t)
			viewer.login(acme.viewer)
			if r := viewer.do("GET", detail, nil); r.code != http.StatusOK || strings.Contains(r.body, `id="redeliver"`) || !strings.Contains(r.body, "answer 503") {
				t.Fatalf("viewer: %d", r.code)
			}
			if r := admin.do("GET", path+"/deliveries/00000000-0000-0000-0000-000000000000", nil); r.code != http.StatusNotFound {
				t.Fatalf("unknown delivery: %d", r.code)
			}
		})
	}
}

// TestReplayFailed: "replay every failed delivery of the last 24 hours"
// queues again the failed deliveries of that window only (not an older
// failure, not a success), keeping their attempts; a viewer may not.
func TestReplayFailed(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			admin := acme.client(t)
			admin.login(acme.admin)
			for range 3 {
				if r := admin.post(path, path+"/test"); r.code != http.StatusSeeOther {
					t.Fatalf("test: %d", r.code)
				}
			}
			now := time.Now().UTC().Add(time.Second)
			cs, err := outbox.Claim(context.Background(), env.DB, outbox.ClaimRequest{Owner: "t", N: 3, EndpointCap: 3, Now: now, LeaseUntil: now.Add(time.Minute)})
			if err != nil || len(cs) != 3 {
				t.Fatalf("claim: %d, %v", len(cs), err)
			}
			status := map[string]outbox.Status{cs[0].ID: outbox.Failed, cs[1].ID: outbox.Failed, cs[2].ID: outbox.Succeeded}
			for _, c := range cs {
				u := outbox.Update{Status: status[c.ID], Attempt: &outbox.Attempt{Number: 1, At: now, StatusCode: 500}}
				if status[c.ID] == outbox.Succeeded {
					u.Attempt.StatusCode = 200
				}
				if held, err := outbox.Finish(context.Background(), env.DB, c, "t", u, now, nil); err != nil || !held {
					t.Fatalf("finish: %v %v", held, err)
				}
			}
			// The first failure is two days old.
			if err := env.DB.Table("delivery_history").Where("id = ?", cs[0].ID).Update("created_at", now.Add(-48*time.Hour)).Error; err != nil {
				t.Fatal(err)
			}
			viewer := acme.client(t)
			viewer.login(acme.viewer)
			if r := viewer.do("POST", path+"/replay", url.Values{"csrf_token": {csrf(t, viewer.do("GET", path, nil).body)}, "since": {"24h"}}); r.code != http.StatusForbidden {
				t.Fatalf("viewer replay: %d", r.code)
			}
			tok := csrf(t, admin.do("GET", path, nil).body)
			if r := admin.do("POST", path+"/replay", url.Values{"csrf_token": {tok}, "since": {"forever"}}); r.code != http.StatusBadRequest {
				t.Fatalf("bad window: %d", r.code)
			}
			if r := admin.do("POST", path+"/replay", url.Values{"csrf_token": {tok}, "since": {"24h"}}); r.code != http.StatusSeeOther {
				t.Fatalf("replay: %d", r.code)
			}
			if got := admin.do("GET", path, nil).body; !strings.Contains(got, "1 failed delivery of the last 24 hours was queued again.") {
				t.Error("no notice of the replay")
			}
			got := map[string]string{}
			for _, d := range acme.deliveries(t, wh.Id) {
				got[d.Id.String()] = string(d.Status)
			}
			if got[cs[0].ID] != "failed" || got[cs[1].ID] != "pending" || got[cs[2].ID] != "succeeded" {
				t.Fatalf("after the replay: %v", got)
			}
		})
	}
}
