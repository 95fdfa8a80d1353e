package registry_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// fakeDNS resolves a few names without touching the network.
func fakeDNS(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch host {
	case "hooks.example.com":
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	case "sneaky.example.com": // a public name that resolves to loopback
		return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}, nil
	case "metadata.example.com":
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	case "v6local.example.com":
		return []netip.Addr{netip.MustParseAddr("::1")}, nil
	}
	return nil, errors.New("no such host")
}

// Finding 9 of the security review: registration accepted a trailing-dot
// LOCALHOST and names that resolve to loopback; only delivery refused them.
// Registration (and PATCH) now normalise the host and refuse, with
// errors.target, a name that resolves to an address deliveries may not
// reach.
func TestRegistrationRefusesNamesThatResolveToBlockedAddresses(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "acme")
		uid, err := db.NextID(d.DB, tn.ID, "users")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": uid, "email": "a@acme", "name": "A", "role": "admin", "password_hash": "!"}).Error; err != nil {
			t.Fatal(err)
		}
		p := &auth.Principal{TenantID: tn.ID, UserID: uid, Role: auth.RoleAdmin}
		box, err := sealing.New(keyring.MustNew("registry-test-global-secret-0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		reg := registry.New(d, box, registry.Options{Policy: testPolicy(t), Lookup: fakeDNS})

		for _, target := range []string{
			"https://sneaky.example.com/hook", "https://Sneaky.Example.COM./hook",
			"https://metadata.example.com/", "https://v6local.example.com:8443/",
			"https://LOCALHOST.:8443/", "https://api.localhost./",
		} {
			_, _, err := reg.Create(ctx, p, outbox.ActCreated, target)
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Kind != apperr.Invalid || !strings.Contains(strings.Join(ae.Fields["target"], " "), "private, loopback or link-local") {
				t.Fatalf("Create(%q) = %v; want 400 with errors.target", target, err)
			}
		}
		var n int64
		d.Table("webhooks").Where("tenant_id = ?", tn.ID).Count(&n)
		if n != 0 {
			t.Fatalf("%d registrations stored from refused targets", n)
		}

		// A good name is accepted and stored normalised; unresolvable names
		// are left to the delivery-time guard.
		w, _, err := reg.Create(ctx, p, outbox.ActCreated, "HTTPS://Hooks.Example.COM./finsvc")
		if err != nil {
			t.Fatal(err)
		}
		if w.Target != "https://hooks.example.com/finsvc" {
			t.Fatalf("stored target %q, want it normalised", w.Target)
		}
		if _, _, err := reg.Create(ctx, p, outbox.ActCreated, "https://not-yet.example.net/"); err != nil {
			t.Fatalf("an unresolvable name was refused: %v", err)
		}
		// PATCH applies the same rule.
		bad := "https://sneaky.example.com/"
		if _, err := reg.Update(ctx, p, w.ID, registry.Patch{Target: &bad}); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("Update to a name resolving to loopback: %v", err)
		}
		good := "https://HOOKS.example.com./v2"
		got, err := reg.Update(ctx, p, w.ID, registry.Patch{Target: &good})
		if err != nil || got.Target != "https://hooks.example.com/v2" {
			t.Fatalf("Update = %+v, %v", got, err)
		}
	})
}

// testPolicy is the operation policy the service runs with (the spec's).
func testPolicy(t testing.TB) *auth.Policy {
	t.Helper()
	p, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
