package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
)

func TestListUsers(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		acme, bravo := env.Tenant("acme"), env.Tenant("bravo")
		admin := acme.User(auth.RoleAdmin)
		member := acme.User(auth.RoleMember)
		viewer := acme.User(auth.RoleViewer)
		bravo.User(auth.RoleAdmin)
		bravo.User(auth.RoleAdmin)
		bravo.User(auth.RoleAdmin)
		bravo.User(auth.RoleAdmin)
		tok := acme.Token(admin, auth.ScopeUsersRead)

		var l models.UserList
		acme.Do("GET", "/api/1.0/users", tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta != (models.PageMeta{CurrentPage: 1, PerPage: 25, Total: 3}) || len(l.Data) != 3 {
			t.Fatalf("users: %+v", l)
		}
		if l.Data[0].Id != admin || l.Data[1].Id != member || l.Data[2].Id != viewer ||
			l.Data[1].Role != models.RoleMember || l.Data[0].Email == "" || l.Data[0].CreatedAt.IsZero() {
			t.Fatalf("users not ordered by id or incomplete: %+v", l.Data)
		}
		acme.Do("GET", "/api/1.0/users?page=2&limit=2", tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 1 || l.Data[0].Id != viewer || l.Meta.Total != 3 {
			t.Fatalf("page 2: %+v", l)
		}
		acme.Do("GET", "/api/1.0/users?page=3&limit=2", tok, nil).Status(t, http.StatusOK).Decode(t, &l)
		if len(l.Data) != 0 || l.Meta.Total != 3 {
			t.Fatalf("past the end: %+v", l)
		}
		wantField(t, acme.Do("GET", "/api/1.0/users?limit=101", tok, nil), "limit")
		wantField(t, acme.Do("GET", "/api/1.0/users?page=x", tok, nil), "page")

		// The admin role is not enough: the token needs users:read, which
		// an app asking for acts only never gets.
		for _, scopes := range [][]string{nil, {auth.ScopeActsRead}, {auth.ScopeUsersWrite, auth.ScopeClientsRead}} {
			e := acme.Do("GET", "/api/1.0/users", acme.Token(admin, scopes...), nil).Status(t, http.StatusForbidden).Err(t)
			if !strings.Contains(e.Message, "users:read") {
				t.Errorf("scopes %v: message %q does not name users:read", scopes, e.Message)
			}
		}
		acme.Do("GET", "/api/1.0/users", acme.Token(member, auth.AllScopes...), nil).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/users", acme.Token(viewer, auth.AllScopes...), nil).Status(t, http.StatusForbidden)
		acme.Do("GET", "/api/1.0/users", "", nil).Status(t, http.StatusUnauthorized)

		bravo.Do("GET", "/api/1.0/users", bravo.AdminToken(), nil).Status(t, http.StatusOK).Decode(t, &l)
		if l.Meta.Total != 5 {
			t.Fatalf("bravo sees %d users, want its own 5", l.Meta.Total)
		}
	})
}
