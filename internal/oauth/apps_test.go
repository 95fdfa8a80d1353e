package oauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/oauth/store"
	"github.com/finsvc/finsvc/internal/testdb"
)

func TestValidateApp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		uris   []string
		scopes []string
		field  string
	}{
		{"", []string{"https://a.example.com/cb"}, nil, "name"},
		{"A", nil, nil, "redirect_uris"},
		{"A", []string{"  "}, nil, "redirect_uris"},
		{"A", []string{"http://a.example.com/cb"}, nil, "redirect_uris"},
		{"A", []string{"https://a.example.com/cb#frag"}, nil, "redirect_uris"},
		{"A", []string{"https://user:pw@a.example.com/cb"}, nil, "redirect_uris"},
		{"A", []string{"javascript:alert(1)"}, nil, "redirect_uris"},
		{"A", []string{"/relative"}, nil, "redirect_uris"},
		{"A", []string{"https://a.example.com/cb"}, []string{"admin"}, "scopes"},
		{"Ledger\x00", []string{"https://a.example.com/cb"}, nil, "name"},
		{"Ledger \xff", []string{"https://a.example.com/cb"}, nil, "name"},
		{"A", []string{"https://a.example.com/cb\xff"}, nil, "redirect_uris"},
	} {
		_, _, _, err := oauth.ValidateApp(tc.name, tc.uris, tc.scopes)
		var ae *apperr.Error
		if !apperr.Is(err, apperr.Invalid) || !asApp(err, &ae) || len(ae.Fields[tc.field]) == 0 {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	name, uris, scopes, err := oauth.ValidateApp(" App ", []string{"https://a.example.com/cb", "http://127.0.0.1:9/cb", "http://localhost/cb", "https://a.example.com/cb"}, []string{"clients:read acts:read", "clients:read"})
	if err != nil || name != "App" || len(uris) != 3 || len(scopes) != 2 {
		t.Fatalf("valid app: %q %v %v %v", name, uris, scopes, err)
	}
}

func asApp(err error, ae **apperr.Error) bool {
	e, ok := err.(*apperr.Error)
	*ae = e
	return ok
}

func TestEnsureAppAndTenantIsolation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		a, _ := testdb.NewTenant(t, d, "acme")
		b, _ := testdb.NewTenant(t, d, "globex")
		id1, s1, err := oauth.EnsureApp(a, d, "Demo App", []string{"http://127.0.0.1:8765/callback"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		id2, s2, err := oauth.EnsureApp(a, d, "Demo App", []string{"http://127.0.0.1:8765/callback"}, nil)
		if err != nil || id2 != id1 || s2 == s1 {
			t.Fatalf("second EnsureApp: %s %v (first %s)", id2, err, id1)
		}
		apps, _ := oauth.ListApps(a, d)
		if len(apps) != 1 || apps[0].SecretHash != store.HashSecret(s2) {
			t.Fatalf("apps: %+v", apps)
		}
		// Tenant B sees none of A's apps and cannot rotate or delete them.
		if apps, _ := oauth.ListApps(b, d); len(apps) != 0 {
			t.Fatalf("tenant B lists %d apps", len(apps))
		}
		if _, _, err := oauth.RotateSecret(b, d, audit.SystemActor, id1, time.Hour); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("rotate from B: %v", err)
		}
		if err := oauth.DeleteApp(b, d, audit.SystemActor, id1); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("delete from B: %v", err)
		}
		if err := oauth.DeleteApp(a, d, audit.SystemActor, id1); err != nil {
			t.Fatal(err)
		}
		if _, _, err := oauth.CreateApp(context.Background(), d, 999999, "X", []string{"https://x.example.com"}, nil); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("unknown tenant: %v", err)
		}
	})
}
