package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// signIn opens the sign-in page (via path, which needs it) in a fresh
// browser and signs p in.
func signIn(t *testing.T, o *org, p person, path string) (*browsertest.Browser, string) {
	t.Helper()
	return signInWith(t, browsertest.Options{}, o, p, path)
}

// signInWith is signIn with a browser of the given options.
func signInWith(t *testing.T, opts browsertest.Options, o *org, p person, path string) (*browsertest.Browser, string) {
	t.Helper()
	srv, _ := url.Parse(o.Server.URL)
	base := "http://" + o.Tenant.Slug + ".localhost:" + srv.Port()
	b := browsertest.New(t, opts)
	b.Open(base + path)
	b.Fill("#email", p.email)
	b.Fill("#password", password)
	b.Submit("#signin")
	if got := b.Path(); got != path {
		t.Fatalf("after sign-in: %s, want %s", got, path)
	}
	return b, base
}

// TestBrowserWebhooks drives the webhook pages in Chromium as an admin:
// the list, a registration, and each button (test event, redeliver,
// rotate with the secret shown once, disable, enable, delete), checking
// the page and the API's state after each; then a viewer's read-only page
// and a member's list. Pages are checked at 1280 and 390 px; any console
// error or failed load fails the test.
func TestBrowserWebhooks(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
	acme.webhook(t, acme.member, "https://127.0.0.1:9/member")
	detail := fmt.Sprintf("/console/webhooks/%d", wh.Id)

	b, base := signIn(t, acme, acme.admin, "/console/webhooks")
	if n := b.Count("#webhooks tbody tr"); n != 2 {
		t.Fatalf("%d registrations listed, want 2", n)
	}
	b.Shoot("webhooks")
	b.Submit(fmt.Sprintf(`#webhooks a[href="%s"]`, detail))
	if b.Text("#deliveries") != "No deliveries yet." || !strings.Contains(b.Text("#state"), "active") {
		t.Fatalf("registration page: %q %q", b.Text("#deliveries"), b.Text("#state"))
	}

	b.Submit("#test")
	if !strings.Contains(b.Text("#notice"), "test event was queued") || b.Count("#deliveries tbody tr") != 1 {
		t.Fatalf("after test: %q", b.Text("#notice"))
	}
	if got := b.Text("#deliveries tbody tr td code"); got != string(models.DeliveryWebhookTest) {
		t.Fatalf("delivery event %q", got)
	}
	ds := acme.deliveries(t, wh.Id)
	if len(ds) != 1 || ds[0].Event != models.DeliveryWebhookTest {
		t.Fatalf("API deliveries %+v", ds)
	}
	b.Shoot("webhook")

	b.Submit("#deliveries .redeliver")
	if !strings.Contains(b.Text("#notice"), ds[0].Id.String()) || b.Text("#delivery-id") != ds[0].Id.String() {
		t.Fatalf("after redeliver: %q on %s", b.Text("#notice"), b.Path())
	}
	if ds := acme.deliveries(t, wh.Id); len(ds) != 1 || ds[0].Status != models.DeliveryPending || ds[0].Attempts != 0 {
		t.Fatalf("after redeliver, API deliveries %+v", ds)
	}
	if b.Text("#event-id") != ds[0].EventId.String() || !strings.Contains(b.Text("#payload"), "A test event from finsvc") {
		t.Fatalf("delivery page: event %q, payload %q", b.Text("#event-id"), b.Text("#payload"))
	}
	b.Shoot("delivery")
	b.Open(base + detail)

	b.Submit("#rotate")
	if !strings.Contains(b.Text("#confirm"), "24 hours") {
		t.Fatalf("rotate asks: %q", b.Text("#confirm"))
	}
	b.Shoot("confirm-rotate")
	b.Submit("#confirm-yes")
	secret := b.Text("#secret")
	if secret == "" || secret == wh.Secret {
		t.Fatalf("rotated secret %q (was %q)", secret, wh.Secret)
	}
	var previous []*string
	if err := env.DB.Table("webhooks").Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id).Pluck("previous_secret_ciphertext", &previous).Error; err != nil || len(previous) != 1 || previous[0] == nil {
		t.Fatalf("no previous secret after rotation: %v", err)
	}
	b.Shoot("webhook-rotated")
	b.Do("reload", chromedp.Reload())
	if b.Count("#secret") != 0 || strings.Contains(b.Text("main"), secret) {
		t.Fatal("the secret is shown again after a reload")
	}

	b.Submit("#disable")
	b.Submit("#confirm-yes")
	if !strings.Contains(b.Text("#state"), "disabled") || b.Count("#enable") != 1 {
		t.Fatalf("after disable: %q", b.Text("#state"))
	}
	var got models.Webhook
	acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
	if got.Active {
		t.Fatal("API: still active after disable")
	}
	b.Submit("#enable")
	acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &got)
	if !got.Active || !strings.Contains(b.Text("#state"), "active") {
		t.Fatal("not active after enable")
	}

	b.Submit("#delete")
	if !strings.Contains(b.Text("#confirm"), "No deliveries are pending") || b.Path() != detail+"/delete" {
		t.Fatalf("delete asks: %q", b.Text("#confirm"))
	}
	acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.admin.token, nil).Status(t, http.StatusOK)
	b.Shoot("confirm-delete")
	b.Submit("#confirm-yes")
	if b.Path() != "/console/webhooks" || b.Count("#webhooks tbody tr") != 1 {
		t.Fatalf("after delete: %s, %d rows", b.Path(), b.Count("#webhooks tbody tr"))
	}
	acme.Do("GET", fmt.Sprintf("/api/1.0/webhooks/%d", wh.Id), acme.admin.token, nil).Status(t, http.StatusNotFound)
	b.OpenStatus(base+detail, http.StatusNotFound)

	// A viewer reads, with no button to press.
	v, _ := signIn(t, acme, acme.viewer, "/console/webhooks")
	v.Submit("#webhooks tbody a")
	if v.Count("#readonly") != 1 || v.Count("form[method=post][action^='/console/webhooks/']") != 0 {
		t.Fatal("viewer: the page offers changes")
	}
	v.Shoot("webhook-viewer")
}

// TestBrowserActsAndUsers drives the fetch requests page (looked up by
// UUID) and the users page in Chromium as an admin: create a user with a
// one-time password shown once, change their role, deactivate them, and see
// the last-admin rule refuse a demotion; the API shows each change.
func TestBrowserActsAndUsers(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	a := fetchedAct(t, env, acme)

	b, base := signIn(t, acme, acme.admin, "/console/acts")
	b.Shoot("acts")
	b.Do("scroll to the lookup", chromedp.ScrollIntoView(chromedp.CSS("#uuid")))
	b.Fill("#uuid", a.Uuid.String())
	b.Submit("#open")
	if b.Path() != "/console/acts/"+a.Uuid.String() {
		t.Fatalf("lookup led to %s", b.Path())
	}
	states := browsertest.Eval[[]string](b, `[...document.querySelectorAll("#fields tbody tr td.state")].map(td => td.textContent.trim())`)
	if strings.Join(states, ",") != "accepted,failed,awaiting,never fetched" {
		t.Fatalf("field states %v", states)
	}
	if n := b.Count(".request"); n != 1 {
		t.Fatalf("%d requests shown", n)
	}
	if h := b.Text("#history"); !strings.Contains(h, "Value accepted") || !strings.Contains(h, "Fetch failed") || strings.Contains(h, "value_accepted") {
		t.Fatalf("history: %q", b.Text("#history"))
	}
	b.Shoot("act")

	b.Submit(`nav a[href="/console/users"]`)
	if n := b.Count("#users tbody tr"); n != 3 {
		t.Fatalf("%d users listed", n)
	}
	b.Shoot("users")
	b.Fill("#new-email", "new.person@acme.example.com")
	b.Fill("#new-name", "New Person")
	b.Submit("#create")
	otp := b.Text("#secret")
	if len(otp) != 20 {
		t.Fatalf("one-time password %q", otp)
	}
	var list struct {
		Data []models.User `json:"data"`
	}
	acme.Do("GET", "/api/1.0/users", acme.admin.token, nil).Status(t, http.StatusOK).Decode(t, &list)
	var created models.User
	for _, u := range list.Data {
		if string(u.Email) == "new.person@acme.example.com" {
			created = u
		}
	}
	if created.Id == 0 || created.Role != "member" {
		t.Fatalf("API users %+v", list.Data)
	}
	row := fmt.Sprintf(`#users tr[data-id="%d"]`, created.Id)
	b.Do("choose admin", chromedp.SetValue(chromedp.CSS(row+" select"), "admin"))
	b.Submit(row + " .change-role")
	if got := acme.user(t, created.Id); got.Role != "admin" {
		t.Fatalf("role after change: %s", got.Role)
	}
	b.Submit(row + " .deactivate")
	if !strings.Contains(b.Text("#confirm"), "new.person@acme.example.com can no longer sign in") {
		t.Fatalf("deactivate asks: %q", b.Text("#confirm"))
	}
	b.Submit("#confirm-yes")
	if got := acme.user(t, created.Id); got.DeactivatedAt == nil {
		t.Fatal("not deactivated")
	}
	b.Submit(row + " .reactivate")
	if got := acme.user(t, created.Id); got.DeactivatedAt != nil || !strings.Contains(b.Text("#notice"), "active again") {
		t.Fatalf("not reactivated: %q", b.Text("#notice"))
	}
	b.Submit(row + " .deactivate")
	b.Submit("#confirm-yes")
	// The original admin is the last active one again: demoting is refused.
	mine := fmt.Sprintf(`#users tr[data-id="%d"]`, acme.admin.id)
	b.Do("choose viewer", chromedp.SetValue(chromedp.CSS(mine+" select"), "viewer"))
	b.Allow(fmt.Sprintf("%s/console/users/%d/role", base, acme.admin.id))
	b.Submit(mine + " .change-role")
	if b.Status() != http.StatusBadRequest || !strings.Contains(b.Text("#error"), "admin") {
		t.Fatalf("no refusal shown: %q", b.Text("#error"))
	}
	if got := acme.user(t, acme.admin.id); got.Role != "admin" {
		t.Fatalf("the last admin became %s", got.Role)
	}
	b.Shoot("users-refused")
}

// TestBrowserCreateWebhook: a member creates a webhook in Chromium (event
// from the catalog, target typed), sees its secret once, sends a test
// event, opens the delivery from the log and redelivers it there; a
// refused target is named beside the field; the member's list holds only
// their own registrations. Every page is checked at 1280 and 390 px.
func TestBrowserCreateWebhook(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	acme.webhook(t, acme.admin, "https://127.0.0.1:9/admins-own")

	b, base := signIn(t, acme, acme.member, "/console/webhooks")
	if strings.Contains(b.Text("main"), "admins-own") {
		t.Fatal("a member sees the admin's webhook")
	}
	b.Submit("#new-webhook")
	if !strings.Contains(b.Text("#create-webhook"), "Sent when an act is created") {
		t.Fatalf("no catalog on the form: %q", b.Text("#create-webhook"))
	}
	b.Shoot("webhook-new")
	b.Do("choose act.created", chromedp.Click(chromedp.CSS(`#event-act\.created`)))
	b.Fill("#target", "ftp://nowhere")
	b.Do("drop the browser's own check", chromedp.SetAttributeValue(chromedp.CSS("#target"), "type", "text"))
	b.Allow(base + "/console/webhooks")
	b.Submit("#create")
	if b.Status() != http.StatusBadRequest || b.Text("#target-error") == "" {
		t.Fatalf("refused target: %d %q", b.Status(), b.Text("#target-error"))
	}
	b.Shoot("webhook-new-refused")
	b.Fill("#target", "https://127.0.0.1:9/members-own")
	b.Submit("#create")
	if b.Text("#secret") == "" || !strings.Contains(b.Text("#notice"), "was created") {
		t.Fatalf("after create: %q", b.Text("#notice"))
	}
	b.Submit("#test")
	b.Submit("#deliveries a.detail")
	id := b.Text("#delivery-id")
	if id == "" || b.Text("#event-id") == "" {
		t.Fatal("no delivery page")
	}
	b.Submit("#redeliver")
	if b.Text("#delivery-id") != id || !strings.Contains(b.Text("#notice"), "earlier attempts stay listed") {
		t.Fatalf("after redeliver: %q", b.Text("#notice"))
	}
	b.Shoot("delivery-redelivered")
}

// TestBrowserActsSearch, at 1280 and at 390 px: the acts list finds an act
// by a word of its title and by the start of its client's name, a row's
// client leads to that client's acts, the status filter narrows, and the
// act opens from the list; the list pages by "Older acts" without losing
// an act. Every page passes Shoot's checks (axe-core included).
func TestBrowserActsSearch(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	a := fetchedAct(t, env, acme) // "Review <2026>" of Acme AB
	birch := actstest.Client(t, env.DB, acme.Ctx, "Birch Oy")
	tpl := actstest.Template(t, env.DB, acme.Ctx, "Year end", actstest.F{Key: "note", Type: "text", Source: templates.SourceManual})
	for i := range 26 {
		acme.Do("POST", "/api/1.0/acts", acme.member.token, map[string]any{"client_id": birch.ID, "template_id": tpl.ID, "title": fmt.Sprintf("Closing %02d", i)}).
			Status(t, http.StatusCreated)
	}
	for _, width := range []int64{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			b, _ := signIn(t, acme, acme.viewer, "/console/acts")
			b.Do("viewport", chromedp.EmulateViewport(width, 844))
			if n := b.Count("#acts tbody tr[data-uuid]"); n != 25 {
				t.Fatalf("%d acts on the first page, want 25", n)
			}
			b.Submit("#older")
			if n := b.Count("#acts tbody tr[data-uuid]"); n != 2 {
				t.Fatalf("%d acts on the second page, want 2", n)
			}
			b.Fill("#q", "review")
			b.Submit("#search")
			if n := b.Count("#acts tbody tr[data-uuid]"); n != 1 || b.Text("#acts tbody a") != "Review <2026>" {
				t.Fatalf("search by title: %d rows, %q", n, b.Text("#acts tbody a"))
			}
			b.Shoot("acts-search")
			b.Fill("#q", "birch")
			b.Submit("#search")
			if n := b.Count("#acts tbody tr[data-uuid]"); n != 25 || b.Count("#older") != 1 {
				t.Fatalf("search by client name: %d rows", n)
			}
			b.Fill("#q", "")
			b.Submit("#search")
			b.Submit("#acts tbody a.client")
			if !strings.Contains(b.Text("#client-filter"), "Birch Oy") || b.Count("#acts tbody tr[data-uuid]") != 25 {
				t.Fatalf("client filter: %q", b.Text("#client-filter"))
			}
			b.Shoot("acts-client")
			b.Submit("#client-clear")
			b.Do("status final", chromedp.SetValue(chromedp.CSS("#status"), "final"))
			b.Submit("#search")
			if b.Text("#no-acts") != "No act matches." {
				t.Fatalf("no final acts: %q", b.Text("#no-acts"))
			}
			b.Submit("#clear")
			b.Fill("#q", "review")
			b.Keys("\r", true)
			b.Submit("#acts tbody td a")
			if b.Path() != "/console/acts/"+a.Uuid.String() {
				t.Fatalf("opened %s", b.Path())
			}
		})
	}
}

// TestBrowserConsoleTour shows every console page not shown by the flows
// above to Shoot (at 1280 and 390 px, axe-core included): the audit log,
// the refusal of a role and an unknown page, the developer and account
// pages, the password page, and the sign-in page after signing out, which
// says so.
func TestBrowserConsoleTour(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	b, base := signIn(t, acme, acme.admin, "/console/audit")
	if b.Count("#audit tbody tr[data-id]") == 0 {
		t.Fatal("no audit records")
	}
	b.Shoot("audit")
	b.Open(base + "/developer/my-apps")
	b.Shoot("developer-apps")
	b.Open(base + "/account/apps")
	b.Shoot("authorized-apps")
	b.OpenStatus(base+"/console/nothing-here", http.StatusNotFound)
	b.Shoot("not-found")
	b.Open(base + "/account/password")
	b.Shoot("password")
	b.Submit("#logout")
	if b.Path() != "/login?signed_out=1" || b.Text("#notice") != "You are signed out." {
		t.Fatalf("after signing out: %s %q", b.Path(), b.Text("#notice"))
	}
	b.Shoot("signed-out")

	// The refusal of a role reads the same in the console and on the
	// developer pages.
	v, _ := signIn(t, acme, acme.viewer, "/console/acts")
	var titles, messages []string
	for _, path := range []string{"/console/users", "/developer/my-apps"} {
		v.OpenStatus(base+path, http.StatusForbidden)
		titles = append(titles, v.Text("h1"))
		messages = append(messages, v.Text("#error"))
		v.Shoot("forbidden" + strings.ReplaceAll(path, "/", "-"))
	}
	if titles[0] != "Not allowed" || titles[1] != titles[0] || !strings.HasPrefix(messages[0], "Role viewer may not ") || !strings.HasPrefix(messages[1], "Role viewer may not ") {
		t.Fatalf("403 pages: %q %q", titles, messages)
	}
}
