package demo_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/demo"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

func TestSeed(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		cfg := config.Default()
		cfg.Addr = "127.0.0.1:43210"
		info, err := demo.Seed(t.Context(), d, cfg, stores(d))
		if err != nil {
			t.Fatal(err)
		}
		if info.BaseURL != "http://demo.localhost:43210" || info.Tenant != "demo" ||
			info.AdminEmail != "admin@demo.localhost" || len(info.AdminPassword) < users.MinPasswordLen {
			t.Errorf("Info = %+v", info)
		}
		tn, err := tenant.NewStore(d).BySlug(t.Context(), "demo")
		if err != nil {
			t.Fatal(err)
		}
		ctx := tenant.NewContext(t.Context(), tn)
		u, err := users.NewStore(d).Authenticate(ctx, info.AdminEmail, info.AdminPassword)
		if err != nil || u.Role != "admin" {
			t.Fatalf("admin login with the printed password: %+v, %v", u, err)
		}

		// Seeding again is fine and issues a new working password.
		info2, err := demo.Seed(t.Context(), d, cfg, stores(d))
		if err != nil {
			t.Fatalf("second Seed: %v", err)
		}
		if info2.AdminPassword == info.AdminPassword {
			t.Error("re-seed kept the old password")
		}
		if _, err := users.NewStore(d).Authenticate(ctx, info.AdminEmail, info2.AdminPassword); err != nil {
			t.Errorf("new password after re-seed: %v", err)
		}
		if _, total, _ := users.NewStore(d).List(ctx, page.Request{Page: 1, Limit: 10}); total != 1 {
			t.Errorf("re-seed created %d users, want 1", total)
		}

		// The demo app: same client id on a re-seed, a new secret that works.
		if info.ClientID == "" || info.ClientSecret == "" || info.RedirectURI != demo.DemoRedirectURI {
			t.Fatalf("app not seeded: %+v", info)
		}
		if info2.ClientID != info.ClientID || info2.ClientSecret == info.ClientSecret {
			t.Errorf("re-seed: client %q/%q, want same id and a new secret", info2.ClientID, info.ClientID)
		}
		apps, err := oauth.ListApps(ctx, d)
		if err != nil || len(apps) != 1 {
			t.Fatalf("apps after re-seed = %d, %v; want 1", len(apps), err)
		}
	})
}

func TestBaseURL(t *testing.T) {
	cfg := config.Default()
	for addr, want := range map[string]string{
		":8080":          "http://demo.localhost:8080",
		"127.0.0.1:9999": "http://demo.localhost:9999",
		"[::1]:80":       "http://demo.localhost",
	} {
		cfg.Addr = addr
		if got, err := demo.BaseURL(cfg, "demo"); err != nil || got != want {
			t.Errorf("BaseURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	cfg.Addr = "127.0.0.1:0"
	if _, err := demo.BaseURL(cfg, "demo"); err == nil {
		t.Error("BaseURL with port 0 succeeded; the bound port is required")
	}
	cfg.Addr, cfg.TLSCert, cfg.TLSKey, cfg.BaseDomain = ":443", "c", "k", "finsvc.example"
	if got, _ := demo.BaseURL(cfg, "acme"); got != "https://acme.finsvc.example" {
		t.Errorf("TLS BaseURL = %q", got)
	}
}

func TestWriteAndPrint(t *testing.T) {
	dir := t.TempDir()
	info := &demo.Info{BaseURL: "http://demo.localhost:8081", Tenant: "demo", AdminEmail: "admin@demo.localhost", AdminPassword: "pw123456789"}
	path, err := info.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "demo.json") {
		t.Errorf("path = %s", path)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("demo.json mode %v, want 0600 (it holds secrets)", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"base_url", "tenant", "admin_email", "admin_password", "client_id", "client_secret", "redirect_uri"} {
		if _, ok := m[k]; !ok {
			t.Errorf("demo.json lacks %q", k)
		}
	}
	var out bytes.Buffer
	info.Print(&out, "[::]:8081", path)
	for _, want := range []string{"pw123456789", "admin@demo.localhost", "curl -H 'Host: demo.localhost' http://127.0.0.1:8081/healthz", path} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed instructions lack %q:\n%s", want, out.String())
		}
	}
}
