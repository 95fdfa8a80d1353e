package client_test

import (
	"context"
	"fmt"
	"github.com/google/uuid"
	"log"
	"os"
	"testing"

	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/apitest"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/client"
	"github.com/finsvc/finsvc/pkg/money"
)

func Example() {
	// An in-process finsvc over a fresh SQLite database, with tenant acme
	// and a token of one of its admins. Against a real deployment, the
	// token source is an oauth2.Config's TokenSource after the
	// authorization-code flow.
	tb := newExampleTB()
	defer tb.cleanup()
	env := apitest.New(tb)
	acme := env.Tenant("acme")
	token := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)
	ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"})

	// env.Server.URL is http://127.0.0.1:<port>; the client addresses the
	// tenant as acme.localhost:<port>. The validating transport checks each
	// response against the OpenAPI document, as in the handler tests.
	c, err := client.New(env.Server.URL, "acme", ts, client.WithTransport(&apitest.ValidatingTransport{T: tb}))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	// One key per logical request, reused by its retries: a retry after a
	// lost answer gets the stored 201 instead of a second client.
	key := uuid.NewString()
	created, err := c.CreateClientWithResponse(ctx, &models.CreateClientParams{IdempotencyKey: &key}, models.ClientCreate{
		CompanyName: "Nordic Timber AS", OrgNumber: "923456781", Country: "NO",
		CreditLimit: money.MustParse("12345678901234567.89"),
	})
	if err != nil || created.JSON201 == nil {
		log.Fatalf("create: %v %s", err, created.Body)
	}
	list, err := c.ListClientsWithResponse(ctx, &models.ListClientsParams{})
	if err != nil || list.JSON200 == nil {
		log.Fatalf("list: %v", err)
	}
	for _, cl := range list.JSON200.Data {
		fmt.Println(cl.Id, cl.CompanyName, cl.Country, cl.CreditLimit)
	}
	fmt.Println("total:", list.JSON200.Meta.Total)
	// Output:
	// 1 Nordic Timber AS NO 12345678901234567.89
	// total: 1
}

// exampleTB lets the example use the test harness, which wants a
// testing.TB, outside a test: it implements the methods apitest and testdb
// call (the embedded nil TB is never reached) and fails loudly otherwise.
type exampleTB struct {
	testing.TB
	ctx      context.Context
	cancel   context.CancelFunc
	cleanups []func()
	dirs     []string
}

func newExampleTB() *exampleTB {
	ctx, cancel := context.WithCancel(context.Background())
	return &exampleTB{ctx: ctx, cancel: cancel}
}

func (e *exampleTB) Helper()                   {}
func (e *exampleTB) Name() string              { return "Example" }
func (e *exampleTB) Context() context.Context  { return e.ctx }
func (e *exampleTB) Cleanup(f func())          { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Logf(string, ...any)       {}
func (e *exampleTB) Log(...any)                {}
func (e *exampleTB) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleTB) Error(a ...any)            { panic(fmt.Sprint(a...)) }
func (e *exampleTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleTB) Fatal(a ...any)            { panic(fmt.Sprint(a...)) }
func (e *exampleTB) Skipf(f string, a ...any)  { panic("skip: " + fmt.Sprintf(f, a...)) }

func (e *exampleTB) TempDir() string {
	d, err := os.MkdirTemp("", "finsvc-example-")
	if err != nil {
		panic(err)
	}
	e.dirs = append(e.dirs, d)
	return d
}

func (e *exampleTB) cleanup() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.cancel()
	for _, d := range e.dirs {
		os.RemoveAll(d)
	}
}
