package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/users"
)

// The Users API: admins create users (with a generated one-time password
// or a given one), read and change them; other roles and tokens without
// the scope are refused; the last active admin cannot be demoted.
func TestUsersAPI(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		adminID := acme.User(auth.RoleAdmin)
		admin := acme.Token(adminID, auth.ScopeUsersRead, auth.ScopeUsersWrite)
		store := users.NewStore(env.DB, users.WithHashParams(apitest.HashParams))

		var created models.UserCreated
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "Ola@Acme.example.com", "name": " Ola ", "role": "member"}).
			Status(t, http.StatusCreated).Decode(t, &created)
		if created.OneTimePassword == nil || len(*created.OneTimePassword) != 20 || created.User.Email != "ola@acme.example.com" ||
			created.User.Name != "Ola" || !created.User.Active || created.User.DeactivatedAt != nil {
			t.Fatalf("created %+v", created)
		}
		if _, err := store.Authenticate(acme.Ctx, "ola@acme.example.com", *created.OneTimePassword); err != nil {
			t.Fatalf("sign-in with the one-time password: %v", err)
		}
		var given models.UserCreated
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "kari@acme.example.com", "role": "viewer", "password": "cantaloupe in a red wheelbarrow"}).
			Status(t, http.StatusCreated).Decode(t, &given)
		if given.OneTimePassword != nil {
			t.Fatalf("a password was generated beside the given one")
		}
		if _, err := store.Authenticate(acme.Ctx, "kari@acme.example.com", "cantaloupe in a red wheelbarrow"); err != nil {
			t.Fatalf("sign-in with the given password: %v", err)
		}
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "OLA@acme.example.com", "role": "member"}).Status(t, http.StatusConflict)
		wantField(t, acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "not an email", "role": "member"}), "email")
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "x@acme.example.com", "role": "owner"}).Status(t, http.StatusBadRequest)
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "x@acme.example.com", "role": "member", "password": "short"}).Status(t, http.StatusBadRequest)

		path := "/api/1.0/users/" + strconv.FormatInt(created.User.Id, 10)
		var got models.User
		acme.Do("GET", path, admin, nil).Status(t, http.StatusOK).Decode(t, &got)
		if got.Id != created.User.Id || got.Role != models.RoleMember {
			t.Fatalf("GET = %+v", got)
		}
		acme.Do("PATCH", path, admin, map[string]any{"name": "Ola Nordmann", "role": "admin"}).Status(t, http.StatusOK).Decode(t, &got)
		if got.Name != "Ola Nordmann" || got.Role != models.RoleAdmin {
			t.Fatalf("PATCH = %+v", got)
		}
		acme.Do("PATCH", path, admin, map[string]any{}).Status(t, http.StatusBadRequest)
		acme.Do("GET", "/api/1.0/users/999", admin, nil).Status(t, http.StatusNotFound)
		acme.Do("PATCH", "/api/1.0/users/999", admin, map[string]any{"name": "x"}).Status(t, http.StatusNotFound)
		acme.Do("DELETE", "/api/1.0/users/999", admin, nil).Status(t, http.StatusNotFound)

		// Not for members, nor without the scope.
		member := acme.Token(acme.User(auth.RoleMember), auth.ScopeUsersRead, auth.ScopeUsersWrite)
		acme.Do("GET", path, member, nil).Status(t, http.StatusForbidden)
		acme.Do("POST", "/api/1.0/users", member, map[string]any{"email": "m@acme.example.com", "role": "admin"}).Status(t, http.StatusForbidden)
		readOnly := acme.Token(adminID, auth.ScopeUsersRead)
		acme.Do("PATCH", path, readOnly, map[string]any{"role": "viewer"}).Status(t, http.StatusForbidden)
		// Another tenant's user is not there.
		globex := env.Tenant("globex")
		gAdmin := globex.Token(globex.User(auth.RoleAdmin), auth.ScopeUsersRead, auth.ScopeUsersWrite)
		globex.Do("GET", path, gAdmin, nil).Status(t, http.StatusNotFound)
		globex.Do("DELETE", path, gAdmin, nil).Status(t, http.StatusNotFound)

		// Two admins now: one may be demoted, then the other is the last.
		self := "/api/1.0/users/" + strconv.FormatInt(adminID, 10)
		acme.Do("PATCH", path, admin, map[string]any{"role": "member"}).Status(t, http.StatusOK)
		wantField(t, acme.Do("PATCH", self, admin, map[string]any{"role": "viewer"}), "role")
		wantField(t, acme.Do("DELETE", self, admin, nil), "role")
		// Renaming the last admin is fine.
		acme.Do("PATCH", self, admin, map[string]any{"name": "Still admin"}).Status(t, http.StatusOK)
	})
}

// Two admins demoting each other at the same moment: exactly one succeeds
// and the tenant keeps one admin, on both dialects, round after round.
func TestLastAdminRace(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		store := users.NewStore(env.DB, users.WithHashParams(apitest.HashParams))
		for round := range 5 {
			a, b := acme.User(auth.RoleAdmin), acme.User(auth.RoleAdmin)
			// Only a and b are admins this round.
			if err := env.DB.Table("users").Where("tenant_id = ? AND role = 'admin' AND id NOT IN ?", acme.Tenant.ID, []int64{a, b}).
				Update("role", "member").Error; err != nil {
				t.Fatal(err)
			}
			member := "member"
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, id := range []int64{a, b} {
				wg.Go(func() {
					if i == 0 {
						_, errs[i] = store.Update(acme.Ctx, id, nil, &member)
					} else {
						errs[i] = store.Deactivate(acme.Ctx, id)
					}
				})
			}
			wg.Wait()
			var admins int64
			env.DB.Table("users").Where("tenant_id = ? AND role = 'admin' AND deactivated_at IS NULL", acme.Tenant.ID).Count(&admins)
			failed := 0
			for _, err := range errs {
				if err != nil {
					failed++
				}
			}
			if admins != 1 || failed != 1 {
				t.Fatalf("round %d: %d admins left, errors %v; want 1 admin and one refusal", round, admins, errs)
			}
		}
	})
}

// The password policy on POST /users: common, short and personal passwords
// are refused with errors.password saying why; a passphrase is taken.
func TestUsersAPIPasswordPolicy(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		admin := acme.Token(acme.User(auth.RoleAdmin), auth.ScopeUsersWrite)
		for _, tc := range []struct{ password, why string }{
			{"password", "at least 12 characters"},
			{"12345678", "at least 12 characters"},
			{"        ", "at least 12 characters"},
			{"password1234", "commonly used password"},
			{"Qwerty123456", "commonly used password"},
			{"acme-2024-acme", "organization's name"},
			{"kari.nordmann1", "email address"},
		} {
			resp := acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "kari.nordmann@acme.example.com", "role": "member", "password": tc.password})
			resp.Status(t, http.StatusBadRequest)
			if msgs := resp.Err(t).Errors["password"]; len(msgs) != 1 || !strings.Contains(msgs[0], tc.why) {
				t.Errorf("%q: errors.password = %q, want %q", tc.password, msgs, tc.why)
			}
		}
		var created models.UserCreated
		acme.Do("POST", "/api/1.0/users", admin, map[string]any{"email": "kari.nordmann@acme.example.com", "role": "member", "password": "cantaloupe in a red wheelbarrow"}).
			Status(t, http.StatusCreated).Decode(t, &created)
		if created.OneTimePassword != nil || created.User.Email != "kari.nordmann@acme.example.com" {
			t.Errorf("created %+v", created)
		}
	})
}

// POST /users/{id}/one-time-password: admins with users:write give a user
// a new one-time password, which works once within 72 hours; the old
// password stops working.
func TestIssueOneTimePasswordAPI(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme := env.Tenant("acme")
		adminID := acme.User(auth.RoleAdmin)
		admin := acme.Token(adminID, auth.ScopeUsersRead, auth.ScopeUsersWrite)
		store := users.NewStore(env.DB, users.WithHashParams(apitest.HashParams))
		u, err := store.Create(acme.Ctx, "kari@acme.example.com", "Kari", "member", "cantaloupe in a red wheelbarrow")
		if err != nil {
			t.Fatal(err)
		}
		path := "/api/1.0/users/" + strconv.FormatInt(u.ID, 10) + "/one-time-password"
		var otp models.OneTimePassword
		before := time.Now()
		acme.Do("POST", path, admin, nil).Status(t, http.StatusOK).Decode(t, &otp)
		if len(otp.OneTimePassword) != 20 || otp.ExpiresAt.Before(before.Add(users.OneTimePasswordTTL-time.Second)) || otp.ExpiresAt.After(time.Now().Add(users.OneTimePasswordTTL)) {
			t.Fatalf("one-time password %+v, want 20 characters expiring in 72 h", otp)
		}
		if _, err := store.Authenticate(acme.Ctx, u.Email, "cantaloupe in a red wheelbarrow"); err == nil {
			t.Error("the old password still works")
		}
		if got, err := store.Authenticate(acme.Ctx, u.Email, otp.OneTimePassword); err != nil || !got.PasswordChangeRequired {
			t.Fatalf("sign-in with the one-time password: %+v, %v", got, err)
		}
		if _, err := store.Authenticate(acme.Ctx, u.Email, otp.OneTimePassword); err == nil {
			t.Error("the one-time password works twice")
		}

		member := acme.Token(acme.User(auth.RoleMember), auth.ScopeUsersRead, auth.ScopeUsersWrite)
		acme.Do("POST", path, member, nil).Status(t, http.StatusForbidden)
		acme.Do("POST", path, acme.Token(adminID, auth.ScopeUsersRead), nil).Status(t, http.StatusForbidden)
		acme.Do("POST", "/api/1.0/users/999/one-time-password", admin, nil).Status(t, http.StatusNotFound)
		globex := env.Tenant("globex")
		globex.Do("POST", path, globex.Token(globex.User(auth.RoleAdmin), auth.ScopeUsersWrite), nil).Status(t, http.StatusNotFound)
		acme.Do("DELETE", "/api/1.0/users/"+strconv.FormatInt(u.ID, 10), admin, nil).Status(t, http.StatusNoContent)
		acme.Do("POST", path, admin, nil).Status(t, http.StatusConflict)
	})
}
