package main

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// finsvc secret reseal over the real tables, on both dialects: webhook
// secrets (current and, during an overlap, previous), a stored idempotent
// response and an authenticator's TOTP secret, all sealed by a service on the old secret, are
// counted under the old key by `secret status`, moved under the new key by
// `secret reseal` in batches with its progress printed, and then counted
// under the new key only; a scan of every text column of the schema finds
// sealed values only in the columns the commands know, and none under the
// old key after the reseal. With the old secret gone from the ring nothing
// is lost: every webhook secret opens to what was handed out, and the keyed
// request replays its stored response.
func TestSecretResealRealTables(t *testing.T) {
	eachDialect(t, func(t *testing.T, env map[string]string) {
		oldSecret, newSecret := "old-service-secret-"+strings.Repeat("o", 30), "new-service-secret-"+strings.Repeat("n", 30)
		oldID, newID := keyring.ID(oldSecret), keyring.ID(newSecret)
		env["FINSVC_SECRET"] = oldSecret
		if r := exec(t, env, "migrate"); r.code != 0 {
			t.Fatalf("migrate: %+v", r)
		}

		// A service on the old secret: two registrations, one rotated
		// with an overlap, and a keyed POST whose response is stored.
		var (
			tn      *tenant.Tenant
			adminID int64
			secrets = map[int64][]string{} // webhook id → current, previous
			keyed   models.WebhookWithSecret
			// an authenticator's secret, sealed in mfa_totp
			totpSecret string
		)
		serveWith := func(t *testing.T, secret string) *apitest.Env {
			d, err := openForTest(t, env)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return apitest.New(t, apitest.WithDB(d), apitest.WithConfig(func(c *config.Config) { c.Secret = secret }))
		}
		key := http.Header{"Idempotency-Key": {"reseal-test-key"}}
		body := map[string]any{"event": "act.created", "target": "https://hooks.example.com/keyed"}
		t.Run("seed", func(t *testing.T) {
			te := serveWith(t, oldSecret).Tenant("acme")
			tn = te.Tenant
			adminID = te.User("admin")
			tok := te.Token(adminID, "webhooks:read", "webhooks:write", "acts:read")
			for _, path := range []string{"/a", "/b"} {
				var w models.WebhookWithSecret
				te.Do("POST", "/api/1.0/webhooks", tok, map[string]any{"event": "act.created", "target": "https://hooks.example.com" + path}).
					Status(t, http.StatusCreated).Decode(t, &w)
				secrets[w.Id] = []string{w.Secret}
			}
			for id := range secrets {
				var w models.WebhookWithSecret
				te.Do("POST", "/api/1.0/webhooks/"+strconv.FormatInt(id, 10)+"/rotate-secret", tok, map[string]any{"previous_secret_expires_in": 86400}).
					Status(t, http.StatusOK).Decode(t, &w)
				secrets[id] = []string{w.Secret, secrets[id][0]}
				break
			}
			te.DoHeader("POST", "/api/1.0/webhooks", tok, body, key).Status(t, http.StatusCreated).Decode(t, &keyed)
			secrets[keyed.Id] = []string{keyed.Secret}
			en, err := totpStore(t, te.Env, oldSecret).BeginTOTP(te.Ctx, adminID, "admin@acme")
			if err != nil {
				t.Fatal(err)
			}
			totpSecret = en.Key.Secret()
		})
		if t.Failed() {
			return
		}
		// Every column of the schema that holds a sealed value is one
		// the commands know (sealedColumns): nothing sealed escapes them.
		known := map[string]bool{}
		for _, c := range sealedColumns() {
			known[c.String()] = true
		}
		found := sealedIn(t, env, "v2:%")
		for col, n := range found {
			if !known[col] {
				t.Errorf("%s holds %d sealed values that finsvc secret status and reseal do not know", col, n)
			}
		}
		if len(found) != len(known) {
			t.Fatalf("sealed values found in %v, want in each of %v", found, known)
		}

		env["FINSVC_SECRET"], env["FINSVC_SECRET_PREVIOUS"] = newSecret, oldSecret
		under := func(out, id string) int {
			n := 0
			for _, m := range regexp.MustCompile(`(?m)^\S+\s+`+id+` \([a-z]+\)\s+(\d+)$`).FindAllStringSubmatch(out, -1) {
				v, _ := strconv.Atoi(m[1])
				n += v
			}
			return n
		}
		// 4 webhook secrets (3 current, 1 previous), 1 stored body and
		// 1 TOTP secret.
		r := exec(t, env, "secret", "status")
		if r.code != 0 || under(r.stdout, oldID) != 6 || under(r.stdout, newID) != 0 || !strings.Contains(r.stdout, "6 sealed values are not under the current key") {
			t.Fatalf("secret status before the reseal: %+v", r)
		}
		r = exec(t, env, "secret", "reseal", "--batch", "2")
		if r.code != 0 || !strings.Contains(r.stdout, "webhooks.secret_ciphertext: 3 resealed") ||
			!strings.Contains(r.stdout, "webhooks.previous_secret_ciphertext: 1 resealed") ||
			!strings.Contains(r.stdout, "idempotency_keys.body: 1 resealed") ||
			!strings.Contains(r.stdout, "mfa_totp.secret_ciphertext: 1 resealed") ||
			!strings.Contains(r.stdout, "every sealed value is under the current key "+newID) {
			t.Fatalf("secret reseal: %+v", r)
		}
		r = exec(t, env, "secret", "status")
		if r.code != 0 || under(r.stdout, oldID) != 0 || under(r.stdout, newID) != 6 || !strings.Contains(r.stdout, "every sealed value is under the current key") {
			t.Fatalf("secret status after the reseal: %+v", r)
		}
		if r := exec(t, env, "secret", "reseal"); r.code != 0 || strings.Contains(r.stdout, "resealed") {
			t.Fatalf("a second reseal: %+v", r)
		}
		if left := sealedIn(t, env, "v2:"+oldID+":%"); len(left) != 0 {
			t.Fatalf("values under the old key left in the database: %v", left)
		}

		// The old secret leaves the ring: nothing is lost.
		delete(env, "FINSVC_SECRET_PREVIOUS")
		e := serveWith(t, newSecret)
		box, err := sealing.New(keyring.MustNew(newSecret))
		if err != nil {
			t.Fatal(err)
		}
		var rows []registry.Webhook
		if err := e.DB.Where("tenant_id = ?", tn.ID).Find(&rows).Error; err != nil || len(rows) != len(secrets) {
			t.Fatalf("%d webhooks, %v", len(rows), err)
		}
		for i := range rows {
			got, err := registry.OpenSecrets(box, &rows[i], time.Now())
			if err != nil || strings.Join(got, ",") != strings.Join(secrets[rows[i].ID], ",") {
				t.Fatalf("webhook %d opens to %v (%v), want %v", rows[i].ID, got, err, secrets[rows[i].ID])
			}
		}
		te := &apitest.TenantEnv{Env: e, Tenant: tn, Ctx: tenant.NewContext(t.Context(), tn), Host: tn.Slug + "." + e.Config.BaseDomain}
		if en, err := totpStore(t, e, newSecret).PendingTOTP(te.Ctx, adminID, "admin@acme"); err != nil || en.Key.Secret() != totpSecret {
			t.Fatalf("the TOTP secret after the old secret left: %v", err)
		}
		var replay models.WebhookWithSecret
		resp := te.DoHeader("POST", "/api/1.0/webhooks", te.Token(adminID, "webhooks:read", "webhooks:write", "acts:read"), body, key).
			Status(t, http.StatusCreated).Decode(t, &replay)
		if resp.Header.Get("Idempotent-Replayed") != "true" || replay.Id != keyed.Id || replay.Secret != keyed.Secret {
			t.Fatalf("the keyed POST after the old secret left: replayed %q, %+v, want %+v", resp.Header.Get("Idempotent-Replayed"), replay, keyed)
		}
	})
}

// totpStore is the second factor's store of e's database, sealing under
// secret alone.
func totpStore(t *testing.T, e *apitest.Env, secret string) *mfa.Store {
	t.Helper()
	box, err := sealing.NewFor(keyring.MustNew(secret), mfa.SealPurpose)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mfa.New(e.DB, box, users.NewStore(e.DB), "finsvc")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sealedIn counts, per table.column of the whole schema (every text
// column of every table), the values LIKE pattern.
func sealedIn(t *testing.T, env map[string]string, pattern string) map[string]int64 {
	t.Helper()
	d, err := openForTest(t, env)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q := `SELECT m.name AS tab, p.name AS col, p.type AS typ FROM sqlite_master m JOIN pragma_table_info(m.name) p
WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`
	if d.Dialect == db.Postgres {
		q = `SELECT c.table_name AS tab, c.column_name AS col, c.data_type AS typ FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`
	}
	var cols []struct{ Tab, Col, Typ string }
	if err := d.Raw(q).Scan(&cols).Error; err != nil || len(cols) == 0 {
		t.Fatalf("the schema's columns: %d, %v", len(cols), err)
	}
	out := map[string]int64{}
	for _, c := range cols {
		if ty := strings.ToUpper(c.Typ); ty != "" && !strings.Contains(ty, "TEXT") && !strings.Contains(ty, "CHAR") {
			continue
		}
		var n int64
		if err := d.Raw(`SELECT count(*) FROM "`+c.Tab+`" WHERE "`+c.Col+`" LIKE ?`, pattern).Scan(&n).Error; err != nil {
			t.Fatalf("%s.%s: %v", c.Tab, c.Col, err)
		}
		if n > 0 {
			out[c.Tab+"."+c.Col] = n
		}
	}
	return out
}
