package httpapi_test

import (
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
)

func TestGetMe(t *testing.T) {
	apitest.Each(t, func(t *testing.T, env *apitest.Env) {
		a := env.Tenant("acme")
		b := env.Tenant("globex")
		a.User(auth.RoleAdmin) // id 1 in acme
		b.User(auth.RoleAdmin) // id 1 in globex, same id
		viewer := a.User(auth.RoleViewer)
		tok := a.Token(viewer) // no scope needed for /me
		resp, err := a.APIClient(tok).GetMeWithResponse(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != 200 || resp.JSON200 == nil {
			t.Fatalf("GET /me = %d %s", resp.StatusCode(), resp.Body)
		}
		me := resp.JSON200
		if me.Id != viewer || string(me.Role) != auth.RoleViewer || me.Organization != "acme" || string(me.Email) == "" || me.Name == "" {
			t.Fatalf("me = %+v", me)
		}
		// The user was deleted after the token was issued: 401.
		if err := env.DB.Table("users").Where("tenant_id = ? AND id = ?", a.Tenant.ID, viewer).Delete(map[string]any{}).Error; err != nil {
			t.Fatal(err)
		}
		a.Do("GET", "/api/1.0/me", tok, nil).Status(t, 401)
		a.Do("GET", "/api/1.0/me", "", nil).Status(t, 401)
	})
}
