package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/testdb"
)

// On SQLite a write that cannot get the database's write lock (another
// process holds it) waits the busy timeout and then answers 503
// unavailable with Retry-After, in the error format, instead of hanging
// past the client's own timeout; reads go on meanwhile (WAL), and writes
// succeed once the lock is free.
func TestSQLiteLockedAnswers503(t *testing.T) {
	d := testdb.SQLite(t)
	env := apitest.New(t, apitest.WithDB(d))
	acme := env.Tenant("acme")
	tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)

	// Another connection, as another process would, takes the write lock.
	sqlDB, err := d.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := acme.Do("POST", "/api/1.0/clients", tok, nordic).Status(t, http.StatusServiceUnavailable)
	waited := time.Since(start)
	if e := r.Err(t); e.Code != models.ErrorCodeUnavailable {
		t.Fatalf("locked: %s", r.Body)
	}
	if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n <= 0 {
		t.Fatalf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	acme.Do("GET", "/api/1.0/clients", tok, nil).Status(t, http.StatusOK)
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	acme.Do("POST", "/api/1.0/clients", tok, nordic).Status(t, http.StatusCreated)
	t.Logf("a locked write answered 503 after %v", waited)
}
