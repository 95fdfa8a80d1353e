package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth/store"
)

func TestAppCreate(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"FINSVC_DATA_DIR": data, "FINSVC_LOG_LEVEL": "warn"}
	if r := exec(t, env, "tenant", "create", "acme"); r.code != 0 {
		t.Fatalf("tenant create: %+v", r)
	}
	r := exec(t, env, "app", "create", "--tenant", "acme", "--name", "CI App", "--redirect-uri", "https://ci.example.com/cb",
		"--redirect-uri", "http://127.0.0.1:8765/cb", "--scopes", "clients:read,acts:read", "--json")
	if r.code != 0 {
		t.Fatalf("app create: %+v", r)
	}
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !strings.HasPrefix(out.ClientID, "app_") || len(out.ClientSecret) != 43 {
		t.Fatalf("json output %q: %v", r.stdout, err)
	}
	d, err := db.Open(t.Context(), "", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var c store.Client
	if err := d.Where("id = ?", out.ClientID).Take(&c).Error; err != nil {
		t.Fatal(err)
	}
	if c.SecretHash != store.HashSecret(out.ClientSecret) || c.Scopes != "clients:read acts:read" || len(c.GetRedirectURIs()) != 2 {
		t.Fatalf("stored app %+v", c)
	}
	// Audited as the service's action, without the secret.
	var recs []audit.Row
	if err := d.Where("tenant_id = ?", c.TenantID).Find(&recs).Error; err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Action != audit.AppCreated || recs[0].ActorType != audit.ActorSystem || recs[0].ActorUserID != nil ||
		recs[0].TargetType != audit.TargetApp || recs[0].TargetID != out.ClientID || recs[0].Outcome != audit.Success {
		t.Fatalf("audit records %+v", recs)
	}
	if rec := fmt.Sprintf("%+v", recs[0]); strings.Contains(rec, out.ClientSecret) {
		t.Fatalf("the audit record holds the secret: %s", rec)
	}

	r = exec(t, env, "app", "create", "--tenant", "acme", "--name", "Plain", "--redirect-uri", "https://ci.example.com/cb")
	if r.code != 0 || !strings.Contains(r.stdout, "client secret: ") {
		t.Fatalf("text output: %+v", r)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--name", "N", "--redirect-uri", "https://x.example.com"}, 2, "--tenant is required"},
		{[]string{"--tenant", "acme", "--redirect-uri", "https://x.example.com"}, 2, "--name is required"},
		{[]string{"--tenant", "acme", "--name", "N"}, 2, "--redirect-uri is required"},
		{[]string{"--tenant", "nope", "--name", "N", "--redirect-uri", "https://x.example.com"}, 1, "not found"},
		{[]string{"--tenant", "acme", "--name", "N", "--redirect-uri", "http://x.example.com"}, 1, "must use https"},
		{[]string{"--tenant", "acme", "--name", "N", "--redirect-uri", "https://x.example.com", "--scopes", "root"}, 1, "unknown scope"},
	} {
		r := exec(t, env, append([]string{"app", "create"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d stderr %q, want %d with %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
	}
	if r := exec(t, env, "app", "create", "--help"); r.code != 0 || !strings.Contains(r.stdout, "--redirect-uri") {
		t.Errorf("help: %+v", r)
	}
}
