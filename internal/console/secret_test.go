package console_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

var revealedRE = regexp.MustCompile(`id="(current|previous)-secret" value="([^"]+)"`)

// revealed is the secrets a page shows, by field.
func revealed(body string) map[string]string {
	out := map[string]string{}
	for _, m := range revealedRE.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// signing is what signs the registration's deliveries now, as the
// delivery worker reads it.
func signing(t *testing.T, o *org, id int64) []string {
	t.Helper()
	var w registry.Webhook
	if err := o.Env.DB.Where("tenant_id = ? AND id = ?", o.Tenant.ID, id).Take(&w).Error; err != nil {
		t.Fatal(err)
	}
	box, err := sealing.New(keyring.MustNew(o.Env.Config.Secret))
	if err != nil {
		t.Fatal(err)
	}
	s, err := registry.OpenSecrets(box, &w, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reveals are the tenant's webhook.secret_revealed records, oldest first.
func reveals(t *testing.T, o *org) []audit.Row {
	t.Helper()
	var rows []audit.Row
	if err := o.Env.DB.Where("tenant_id = ? AND action = ?", o.Tenant.ID, audit.WebhookSecretRevealed).Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRevealSecret: on the webhook page an admin (or the member who
// created it) reveals the signing secret by typing their password again.
// The secret comes on the GET the form's POST redirects to (no-store, in
// no URL), is the one that signs, with the previous one during an
// overlap, and a reload shows the form again; a wrong password is a
// sentence beside the field, shows nothing and is recorded as a failure.
// A viewer gets the shared 403 page, a member's view of another's
// registration and another tenant's id are 404. No audit record holds a
// secret.
func TestRevealSecret(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme, other := newOrg(t, env, "acme"), newOrg(t, env, "other")
			mine := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
			theirs := acme.webhook(t, acme.member, "https://127.0.0.1:9/member")
			foreign := other.foreignWebhook(t)
			page := func(id int64) string { return fmt.Sprintf("/console/webhooks/%d", id) }
			secret := func(id int64) string { return page(id) + "/secret" }

			admin := acme.client(t)
			admin.login(acme.admin)
			if r := admin.do("GET", page(mine.Id), nil); !strings.Contains(r.body, `href="`+secret(mine.Id)+`" id="reveal-secret"`) {
				t.Fatalf("no Reveal secret control on the webhook page: %d", r.code)
			}
			form := admin.do("GET", secret(mine.Id), nil)
			if form.code != http.StatusOK || !strings.Contains(form.body, `id="reveal-form"`) || strings.Contains(form.body, mine.Secret) {
				t.Fatalf("reveal page: %d %s", form.code, form.body)
			}

			// A wrong password: a sentence beside the field, nothing shown, a failure recorded.
			r := admin.do("POST", secret(mine.Id), url.Values{"csrf_token": {csrf(t, form.body)}, "password": {"not my password at all"}})
			if r.code != http.StatusBadRequest || strings.Contains(r.body, mine.Secret) || len(revealed(r.body)) != 0 ||
				!strings.Contains(r.body, `<p class="field-error" id="password-error">Your password is not the one you sign in with.</p>`) ||
				!strings.Contains(r.body, `aria-describedby="password-error"`) {
				t.Fatalf("wrong password: %d %s", r.code, r.body)
			}
			if rows := reveals(t, acme); len(rows) != 1 || rows[0].Outcome != audit.Failure || *rows[0].ActorUserID != acme.admin.id ||
				rows[0].TargetType != audit.TargetWebhook || rows[0].TargetID != strconv.FormatInt(mine.Id, 10) {
				t.Fatalf("after a wrong password, records %+v", rows)
			}
			// Without the form's token nothing is checked.
			if r := admin.do("POST", secret(mine.Id), url.Values{"password": {password}}); r.code != http.StatusForbidden || len(revealed(r.body)) != 0 {
				t.Fatalf("without a token: %d", r.code)
			}

			// The right password, during a 7-day overlap: both secrets.
			var rot models.WebhookWithSecret
			acme.Do("POST", fmt.Sprintf("/api/1.0/webhooks/%d/rotate-secret", mine.Id), acme.admin.token,
				map[string]any{"previous_secret_expires_in": 604800}).Status(t, http.StatusOK).Decode(t, &rot)
			r = admin.do("POST", secret(mine.Id), url.Values{"csrf_token": {csrf(t, form.body)}, "password": {password}})
			if r.code != http.StatusSeeOther || r.location != secret(mine.Id) || strings.Contains(r.body, rot.Secret) {
				t.Fatalf("reveal: %d %q", r.code, r.location)
			}
			shown := admin.do("GET", secret(mine.Id), nil)
			got, now := revealed(shown.body), signing(t, acme, mine.Id)
			if shown.code != http.StatusOK || shown.header.Get("Cache-Control") != "no-store" || len(now) != 2 ||
				got["current"] != rot.Secret || got["current"] != now[0] || got["previous"] != mine.Secret || got["previous"] != now[1] {
				t.Fatalf("revealed %v (Cache-Control %q), signing %v", got, shown.header.Get("Cache-Control"), now)
			}
			if !strings.Contains(shown.body, `id="copy-current" data-copy="current-secret"`) || !strings.Contains(shown.body, rot.PreviousSecretExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC")) {
				t.Error("no Copy button, or no end of the overlap, beside the secrets")
			}
			if csp := shown.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
				t.Errorf("the page with the Copy button: CSP %q", csp)
			}
			if csp := form.header.Get("Content-Security-Policy"); strings.Contains(csp, "script-src") {
				t.Errorf("the password form allows scripts: %q", csp)
			}
			// A reload shows the form again, and nothing else.
			if again := admin.do("GET", secret(mine.Id), nil); len(revealed(again.body)) != 0 || !strings.Contains(again.body, `id="reveal-form"`) {
				t.Fatal("a reload shows the secret again")
			}
			rows := reveals(t, acme)
			if len(rows) != 2 || rows[1].Outcome != audit.Success || rows[1].ActorType != audit.ActorUser || *rows[1].ActorUserID != acme.admin.id ||
				rows[1].TargetID != strconv.FormatInt(mine.Id, 10) {
				t.Fatalf("after the reveal, records %+v", rows)
			}

			// The member who created one reveals it (no overlap: one secret).
			member := acme.client(t)
			member.login(acme.member)
			mform := member.do("GET", secret(theirs.Id), nil)
			member.do("POST", secret(theirs.Id), url.Values{"csrf_token": {csrf(t, mform.body)}, "password": {password}})
			if got := revealed(member.do("GET", secret(theirs.Id), nil).body); got["current"] != theirs.Secret || got["previous"] != "" {
				t.Fatalf("member revealed %v", got)
			}
			// Another's registration is invisible to them, as everywhere.
			if r := member.do("GET", secret(mine.Id), nil); r.code != http.StatusNotFound {
				t.Fatalf("member, another's registration: %d", r.code)
			}
			if r := member.do("POST", secret(mine.Id), url.Values{"csrf_token": {csrf(t, mform.body)}, "password": {password}}); r.code != http.StatusNotFound {
				t.Fatalf("member, reveal another's registration: %d", r.code)
			}

			// A viewer: the shared 403 page, and no control.
			viewer := acme.client(t)
			viewer.login(acme.viewer)
			if r := viewer.do("GET", page(mine.Id), nil); strings.Contains(r.body, "reveal-secret") {
				t.Error("a viewer is offered the Reveal secret control")
			}
			if r := viewer.do("GET", secret(mine.Id), nil); r.code != http.StatusForbidden || !strings.Contains(r.body, "<h1>Not allowed</h1>") || len(revealed(r.body)) != 0 {
				t.Fatalf("viewer: %d %s", r.code, r.body)
			}
			// (A viewer's pages carry no console form, so a post is refused for its token already.)
			if r := viewer.do("POST", secret(mine.Id), url.Values{"password": {password}}); r.code != http.StatusForbidden || len(revealed(r.body)) != 0 {
				t.Fatalf("viewer post: %d", r.code)
			}

			// Another tenant's id does not exist here.
			if foreign <= theirs.Id {
				t.Fatalf("fixture: foreign id %d", foreign)
			}
			if r := admin.do("GET", secret(foreign), nil); r.code != http.StatusNotFound {
				t.Fatalf("another tenant's id: %d", r.code)
			}
			if r := admin.do("POST", secret(foreign), url.Values{"csrf_token": {csrf(t, form.body)}, "password": {password}}); r.code != http.StatusNotFound {
				t.Fatalf("reveal another tenant's id: %d", r.code)
			}

			// Refusals recorded nothing more: admin failure, admin success, member success.
			rows = reveals(t, acme)
			if len(rows) != 3 || rows[2].Outcome != audit.Success || *rows[2].ActorUserID != acme.member.id {
				t.Fatalf("records %+v", rows)
			}
			var all []audit.Row
			if err := env.DB.Find(&all).Error; err != nil {
				t.Fatal(err)
			}
			for _, row := range all {
				text := fmt.Sprintf("%+v", row)
				for _, s := range []string{mine.Secret, rot.Secret, theirs.Secret, password} {
					if strings.Contains(text, s) {
						t.Errorf("audit record %d holds a secret or a password", row.ID)
					}
				}
			}
		})
	}
}

// TestRevealSecretThrottled: wrong passwords typed to reveal a secret
// spend the sign-in's budget for the account: after the limit even the
// right password is refused (429) without revealing anything.
func TestRevealSecretThrottled(t *testing.T) {
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
	path := fmt.Sprintf("/console/webhooks/%d/secret", wh.Id)
	admin := acme.client(t)
	admin.login(acme.admin)
	tok := csrf(t, admin.do("GET", path, nil).body)
	for i := range 5 {
		if r := admin.do("POST", path, url.Values{"csrf_token": {tok}, "password": {"wrong password " + strconv.Itoa(i)}}); r.code != http.StatusBadRequest {
			t.Fatalf("wrong password %d: %d", i, r.code)
		}
	}
	r := admin.do("POST", path, url.Values{"csrf_token": {tok}, "password": {password}})
	if r.code != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || r.location != "" || strings.Contains(r.body, wh.Secret) {
		t.Fatalf("after 5 wrong passwords: %d %q", r.code, r.location)
	}
	if rows := reveals(t, acme); len(rows) != 5 {
		t.Fatalf("%d reveal records, want the 5 failures", len(rows))
	}
	// The same budget as signing in.
	login := acme.client(t)
	page := login.do("GET", "/login", nil)
	if r := login.do("POST", "/login", url.Values{"csrf_token": {csrf(t, page.body)}, "email": {acme.admin.email}, "password": {password}}); r.code != http.StatusTooManyRequests {
		t.Fatalf("sign-in after 5 wrong reveal passwords: %d", r.code)
	}
}

var radioRE = regexp.MustCompile(`<input type="radio" id="overlap-\d" name="overlap" value="([^"]+)"( checked)?`)

// TestRotateChoosingOverlap: the rotation's confirmation offers now, 24
// hours (chosen) and 7 days, each saying what it does; choosing 7 days
// keeps the previous secret for 7 days, "now" keeps none, and a value
// that is no choice rotates nothing.
func TestRotateChoosingOverlap(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme := newOrg(t, env, "acme")
			wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/admin")
			path := fmt.Sprintf("/console/webhooks/%d", wh.Id)
			get := func() registry.Webhook {
				var w registry.Webhook
				if err := env.DB.Where("tenant_id = ? AND id = ?", acme.Tenant.ID, wh.Id).Take(&w).Error; err != nil {
					t.Fatal(err)
				}
				return w
			}
			admin := acme.client(t)
			admin.login(acme.admin)

			page, tok := admin.ask(path, path+"/rotate")
			var values []string
			checked := ""
			for _, m := range radioRE.FindAllStringSubmatch(page.body, -1) {
				values = append(values, m[1])
				if m[2] != "" {
					checked += m[1]
				}
			}
			if strings.Join(values, ",") != "now,24h,7d" || checked != "24h" {
				t.Fatalf("choices %v, checked %q", values, checked)
			}
			for _, effect := range []string{"Only the new secret signs from now on", "For 24 hours every delivery carries signatures by both secrets", "For 7 days every delivery carries signatures by both secrets"} {
				if !strings.Contains(html.UnescapeString(page.body), effect) {
					t.Errorf("the confirmation does not say %q", effect)
				}
			}

			before := time.Now().Add(-time.Second)
			r := admin.do("POST", path+"/rotate", url.Values{"csrf_token": {tok}, "overlap": {"7d"}})
			after := time.Now().Add(time.Second)
			if r.code != http.StatusSeeOther || r.location != path {
				t.Fatalf("rotate for 7 days: %d %q", r.code, r.location)
			}
			shown := html.UnescapeString(admin.do("GET", path, nil).body)
			if !strings.Contains(shown, "The signing secret was rotated. The previous one keeps signing for 7 days.") {
				t.Error("no notice of the 7 days")
			}
			w, week := get(), 7*24*time.Hour
			if at := w.PreviousSecretExpiresAt; at == nil || at.Before(before.Add(week)) || at.After(after.Add(week)) {
				t.Fatalf("previous secret until %v, want in 7 days", at)
			}
			if s := signing(t, acme, wh.Id); len(s) != 2 || s[1] != wh.Secret || !strings.Contains(shown, s[0]) {
				t.Fatalf("after the rotation %d secrets sign, the new one shown: %v", len(s), strings.Contains(shown, s[0]))
			}

			r = admin.do("POST", path+"/rotate", url.Values{"csrf_token": {tok}, "overlap": {"now"}})
			if r.code != http.StatusSeeOther || get().PreviousSecretExpiresAt != nil || len(signing(t, acme, wh.Id)) != 1 {
				t.Fatalf("rotate now: %d, previous secret until %v", r.code, get().PreviousSecretExpiresAt)
			}
			if !strings.Contains(admin.do("GET", path, nil).body, "The previous one no longer signs.") {
				t.Error("no notice of the immediate end")
			}

			cur := signing(t, acme, wh.Id)[0]
			r = admin.do("POST", path+"/rotate", url.Values{"csrf_token": {tok}, "overlap": {"30d"}})
			if r.code != http.StatusBadRequest || !strings.Contains(r.body, "Choose how long the previous secret keeps signing") || signing(t, acme, wh.Id)[0] != cur {
				t.Fatalf("an unknown overlap: %d", r.code)
			}
		})
	}
}
