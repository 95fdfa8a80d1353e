package oauth_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
)

// Deactivating a user (DELETE /api/1.0/users/{id}) ends everything it
// holds, with real tokens: its access token is refused, its refresh token
// no longer refreshes, and it can no longer sign in. The last admin cannot
// be deactivated.
func TestDeactivatedUserLosesAccess(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		member := s.org(t, "acme", auth.RoleMember)
		access, refresh := member.tokens(t)
		if code, _ := member.me(t, access); code != http.StatusOK {
			t.Fatalf("member before: %d", code)
		}
		// An admin of the same tenant, signed in through the same app.
		admin := *member
		admin.email = "admin@acme.example.com"
		u, err := s.svcUsers().Create(member.Ctx, admin.email, "Admin", auth.RoleAdmin, testPassword)
		if err != nil {
			t.Fatal(err)
		}
		admin.userID = u.ID
		params := admin.authParams("state-admin")
		params.Set("scope", "users:read users:write")
		r := admin.token(t, admin.codeGrant(admin.code(t, params)), reqStyle{})
		if r.Code != http.StatusOK {
			t.Fatalf("admin token: %d %v", r.Code, r.Body)
		}
		adminAccess := r.str("access_token")

		path := "/api/1.0/users/" + strconv.FormatInt(member.userID, 10)
		// The member's token is in the bearer cache (app.TokenCacheTTL,
		// 10 s) from this moment.
		if code, _ := member.me(t, access); code != http.StatusOK {
			t.Fatalf("member just before: %d", code)
		}
		member.Do("DELETE", path, adminAccess, nil).Status(t, http.StatusNoContent)

		// Refused at once: the revocation reaches every token cache through
		// the database's notification (PostgreSQL), so allow for its
		// delivery on a loaded machine, but not for the cache's lifetime.
		deadline := time.Now().Add(3 * time.Second)
		for {
			code, _ := member.me(t, access)
			if code == http.StatusUnauthorized {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("deactivated user's token still answers %d after 3 s", code)
			}
			time.Sleep(10 * time.Millisecond)
		}
		expectOAuthError(t, member.token(t, member.refreshGrant(refresh), reqStyle{}), http.StatusBadRequest, "invalid_grant")
		if _, err := s.svcUsers().Authenticate(member.Ctx, member.email, testPassword); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("sign-in of a deactivated user: %v", err)
		}
		var got map[string]any
		json.Unmarshal(member.Do("GET", path, adminAccess, nil).Status(t, http.StatusOK).Body, &got)
		if got["active"] != false || got["deactivated_at"] == nil {
			t.Fatalf("deactivated user reads %v", got)
		}
		// Again: still 204 (a retry finishes the job).
		member.Do("DELETE", path, adminAccess, nil).Status(t, http.StatusNoContent)

		// The only active admin left cannot go.
		self := "/api/1.0/users/" + strconv.FormatInt(admin.userID, 10)
		e := member.Do("DELETE", self, adminAccess, nil).Status(t, http.StatusBadRequest).Err(t)
		if len(e.Errors["role"]) == 0 {
			t.Fatalf("errors = %v; want role", e.Errors)
		}
		member.Do("GET", self, adminAccess, nil).Status(t, http.StatusOK)
	})
}
