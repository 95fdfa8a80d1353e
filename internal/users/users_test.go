package users_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

func TestCreateGetByEmail(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		s := users.NewStore(d)
		u, err := s.Create(ctx, "  Alice@Example.COM ", " Alice ", "admin", "correct horse")
		if err != nil {
			t.Fatal(err)
		}
		if u.ID != 1 || u.Email != "alice@example.com" || u.Name != "Alice" || u.Role != "admin" ||
			u.CreatedAt.IsZero() || u.UpdatedAt.IsZero() || !strings.HasPrefix(u.PasswordHash, "$argon2id$v=19$") {
			t.Errorf("Create = %+v", u)
		}
		u2, err := s.Create(ctx, "bob@example.com", "", "viewer", "quiet violet harbor")
		if err != nil || u2.ID != 2 {
			t.Fatalf("second user = %+v, %v; want id 2", u2, err)
		}

		got, err := s.Get(ctx, 1)
		if err != nil || got.Email != "alice@example.com" || got.PasswordHash != u.PasswordHash || !got.CreatedAt.Equal(u.CreatedAt) {
			t.Errorf("Get(1) = %+v, %v", got, err)
		}
		if got, err := s.ByEmail(ctx, "ALICE@example.com"); err != nil || got.ID != 1 {
			t.Errorf("ByEmail (case-insensitive) = %+v, %v", got, err)
		}
		if _, err := s.Get(ctx, 99); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("Get(99) = %v, want NotFound", err)
		}
		if _, err := s.ByEmail(ctx, "nobody@example.com"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("ByEmail(unknown) = %v, want NotFound", err)
		}

		_, err = s.Create(ctx, "ALICE@example.com", "", "member", "brisk copper lantern")
		if !apperr.Is(err, apperr.Conflict) || len(err.(*apperr.Error).Fields["email"]) == 0 {
			t.Errorf("duplicate email = %v, want Conflict with field email", err)
		}
		// The failed create rolled back its id allocation.
		if u3, err := s.Create(ctx, "carol@example.com", "", "member", "brisk copper lantern"); err != nil || u3.ID != 3 {
			t.Errorf("next user = %+v, %v; want id 3", u3, err)
		}
	})
}

func TestCreateValidation(t *testing.T) {
	d := testdb.SQLite(t)
	ctx, _ := testdb.NewTenant(t, d, "acme")
	s := users.NewStore(d)
	tests := []struct {
		email, name, role, password string
		field                       string
	}{
		{"", "", "admin", "pale orange kettle", "email"},
		{"not-an-email", "", "admin", "pale orange kettle", "email"},
		{"Bob <bob@example.com>", "", "admin", "pale orange kettle", "email"},
		{"bob@example", "", "admin", "pale orange kettle", "email"},
		{strings.Repeat("a", 250) + "@example.com", "", "admin", "pale orange kettle", "email"},
		{"bob@example.com", strings.Repeat("n", 201), "admin", "pale orange kettle", "name"},
		{"bob@example.com", "", "owner", "pale orange kettle", "role"},
		{"bob@example.com", "", "", "pale orange kettle", "role"},
		{"bob@example.com", "", "admin", "short", "password"},
		{"bob@example.com", "", "admin", strings.Repeat("p", 1025), "password"},
	}
	for _, tt := range tests {
		_, err := s.Create(ctx, tt.email, tt.name, tt.role, tt.password)
		var e *apperr.Error
		if !apperr.Is(err, apperr.Invalid) {
			t.Errorf("Create(%q, %q, %q) = %v, want Invalid", tt.email, tt.role, tt.password, err)
			continue
		}
		e = err.(*apperr.Error)
		if len(e.Fields[tt.field]) == 0 {
			t.Errorf("Create(%q, %q, %q): fields %v lack %q", tt.email, tt.role, tt.password, e.Fields, tt.field)
		}
	}
	if _, err := s.Create(ctx, "admin@demo.localhost", "", "admin", "pale orange kettle"); err != nil {
		t.Errorf("localhost domain rejected: %v", err)
	}
}

// TestTenantIsolation: two tenants hold users with the same ids and
// emails; each sees only its own.
func TestTenantIsolation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctxA, _ := testdb.NewTenant(t, d, "acme")
		ctxB, _ := testdb.NewTenant(t, d, "beta")
		s := users.NewStore(d)
		a1, err := s.Create(ctxA, "shared@example.com", "A one", "admin", "amber wolf meadow")
		if err != nil {
			t.Fatal(err)
		}
		b1, err := s.Create(ctxB, "shared@example.com", "B one", "viewer", "bright fern canyon")
		if err != nil {
			t.Fatalf("same email in another tenant: %v", err)
		}
		if _, err := s.Create(ctxA, "only-a@example.com", "A two", "member", "amber wolf meadow two"); err != nil {
			t.Fatal(err)
		}
		if a1.ID != 1 || b1.ID != 1 {
			t.Fatalf("ids %d and %d; want both 1 (per-tenant ids)", a1.ID, b1.ID)
		}

		if got, err := s.Get(ctxA, 1); err != nil || got.Name != "A one" {
			t.Errorf("A Get(1) = %+v, %v", got, err)
		}
		if got, err := s.Get(ctxB, 1); err != nil || got.Name != "B one" {
			t.Errorf("B Get(1) = %+v, %v", got, err)
		}
		if _, err := s.Get(ctxB, 2); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("B sees A's user 2: %v", err)
		}
		if _, err := s.ByEmail(ctxB, "only-a@example.com"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("B finds A's user by email: %v", err)
		}
		if got, err := s.ByEmail(ctxB, "shared@example.com"); err != nil || got.Role != "viewer" {
			t.Errorf("B ByEmail(shared) = %+v, %v", got, err)
		}

		la, ta, err := s.List(ctxA, page.Request{Page: 1, Limit: 25})
		if err != nil || ta != 2 || len(la) != 2 {
			t.Errorf("A List = %d users, total %d, %v; want 2, 2", len(la), ta, err)
		}
		lb, tb, err := s.List(ctxB, page.Request{Page: 1, Limit: 25})
		if err != nil || tb != 1 || len(lb) != 1 || lb[0].Name != "B one" {
			t.Errorf("B List = %+v, total %d, %v", lb, tb, err)
		}

		// Credentials do not cross tenants.
		if _, err := s.Authenticate(ctxB, "shared@example.com", "amber wolf meadow"); !apperr.Is(err, apperr.Unauthenticated) {
			t.Errorf("A's password works in B: %v", err)
		}
		if u, err := s.Authenticate(ctxB, "shared@example.com", "bright fern canyon"); err != nil || u.Name != "B one" {
			t.Errorf("B login = %+v, %v", u, err)
		}
		if err := s.SetPassword(ctxB, 2, "silent tulip engine"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("B SetPassword on A's user 2 = %v, want NotFound", err)
		}
	})
}

func TestList(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		s := users.NewStore(d)
		for i := range 7 {
			if _, err := s.Create(ctx, "u"+string(rune('a'+i))+"@example.com", "", "viewer", "pale orange kettle"); err != nil {
				t.Fatal(err)
			}
		}
		counted, count := d.CountQueries()
		cs := users.NewStore(counted)
		page2, total, err := cs.List(ctx, page.Request{Page: 2, Limit: 3})
		if err != nil || total != 7 || len(page2) != 3 || page2[0].ID != 4 || page2[2].ID != 6 {
			t.Fatalf("List(2, 3) = %+v, %d, %v", page2, total, err)
		}
		if n := count(); n != 2 {
			t.Errorf("List ran %d queries, want 2 (one count, one page)", n)
		}
		last, _, _ := cs.List(ctx, page.Request{Page: 3, Limit: 3})
		if len(last) != 1 || last[0].ID != 7 {
			t.Errorf("last page = %+v", last)
		}
		beyond, total, err := cs.List(ctx, page.Request{Page: 9, Limit: 3})
		if err != nil || total != 7 || beyond == nil || len(beyond) != 0 {
			t.Errorf("page beyond the end = %v, %d, %v; want empty non-nil", beyond, total, err)
		}
		for _, pl := range [][2]int{{0, 10}, {1, 0}, {1, 101}, {-1, 5}} {
			if _, _, err := cs.List(ctx, page.Request{Page: pl[0], Limit: pl[1]}); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("List(%d, %d) = %v, want Invalid", pl[0], pl[1], err)
			}
		}
	})
}

func TestAuthenticate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		s := users.NewStore(d)
		if _, err := s.Create(ctx, "alice@example.com", "Alice", "member", "correct horse"); err != nil {
			t.Fatal(err)
		}
		u, err := s.Authenticate(ctx, "Alice@Example.com", "correct horse")
		if err != nil || u.Email != "alice@example.com" {
			t.Fatalf("Authenticate = %+v, %v", u, err)
		}
		wrong, err1 := s.Authenticate(ctx, "alice@example.com", "wrong horse")
		_, err2 := s.Authenticate(ctx, "nobody@example.com", "correct horse")
		if wrong != nil || !apperr.Is(err1, apperr.Unauthenticated) || !apperr.Is(err2, apperr.Unauthenticated) {
			t.Fatalf("bad logins: %v, %v", err1, err2)
		}
		if err1.Error() != err2.Error() {
			t.Errorf("wrong password (%q) and unknown email (%q) are distinguishable", err1, err2)
		}
		if _, err := s.Authenticate(ctx, "alice@example.com", strings.Repeat("x", 2000)); !apperr.Is(err, apperr.Unauthenticated) {
			t.Errorf("huge password: %v", err)
		}

		if err := s.SetPassword(ctx, u.ID, "battery staple"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(ctx, "alice@example.com", "correct horse"); err == nil {
			t.Error("old password still works after SetPassword")
		}
		if _, err := s.Authenticate(ctx, "alice@example.com", "battery staple"); err != nil {
			t.Errorf("new password: %v", err)
		}
		if err := s.SetPassword(ctx, u.ID, "short"); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("SetPassword(short) = %v", err)
		}
	})
}

func TestJSONOmitsSecrets(t *testing.T) {
	b, err := json.Marshal(users.User{TenantID: 5, ID: 1, Email: "a@b.io", Name: "A", Role: "admin", PasswordHash: "$argon2id$secret"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"id", "email", "name", "role", "created_at", "updated_at", "deactivated_at"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if len(m) != 7 || strings.Contains(string(b), "argon2id") {
		t.Errorf("JSON has extra or secret fields: %s", b)
	}
}
