package apitest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/clients/go/finsvc"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
)

// The installable client (module clients/go, wired in through go.mod's
// replace) against the real server: it addresses the tenant, authenticates,
// and its models round-trip a money amount exactly (json.Number instead of
// the server's money.Decimal). Every response is checked against the spec.
func TestInstallableClientAgainstServer(t *testing.T) {
	env := apitest.New(t)
	acme := env.Tenant("acme")
	token := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)
	ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"})
	c, err := finsvc.New(env.Server.URL, "acme", ts, finsvc.WithTransport(&apitest.ValidatingTransport{T: t}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := uuid.NewString()
	created, err := c.CreateClientWithResponse(ctx, &finsvc.CreateClientParams{IdempotencyKey: &key}, finsvc.ClientCreate{
		CompanyName: "Nordic Timber AS", OrgNumber: "923456781", Country: "NO",
		CreditLimit: json.Number("12345678901234567.89"),
	})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create: %v %s", err, created.Body)
	}
	got, err := c.GetClientWithResponse(ctx, created.JSON201.Id)
	if err != nil || got.JSON200 == nil {
		t.Fatalf("get: %v", err)
	}
	if got.JSON200.CreditLimit != "12345678901234567.89" || got.JSON200.CompanyName != "Nordic Timber AS" {
		t.Fatalf("read back %+v", got.JSON200)
	}
	list, err := c.ListClientsWithResponse(ctx, &finsvc.ListClientsParams{})
	if err != nil || list.JSON200 == nil || list.JSON200.Meta.Total != 1 {
		t.Fatalf("list: %v %s", err, list.Body)
	}
}
