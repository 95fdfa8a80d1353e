package oauth_test

import (
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
)

// TestRefreshRoundTrips pins the statements of one refresh grant. On
// PostgreSQL: the app and the presented token read together
// (store.PrefetchRefresh), the rotation in one statement, and the wait for
// its durability; on SQLite the read and the rotation's four writes in
// its transaction. Both ways of sending client credentials (the form and
// HTTP Basic) take the prefetch.
func TestRefreshRoundTrips(t *testing.T) {
	want := map[string]int{db.Postgres: 3, db.SQLite: 5}
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			counted, count := testdb.Open(t, dialect).CountQueries()
			// Production's resolver, which keeps tenants in memory: the
			// harness's reads the tenant on every request.
			s := newServer(t, serverOpt{logger: testLogger(), opts: []apitest.Option{apitest.WithDB(counted),
				apitest.WithApp(app.WithTenants(tenant.NewStore(counted)))}})
			o := s.org(t, "acme", "admin")
			_, refresh := o.tokens(t)
			for _, st := range []reqStyle{{}, {basic: true}} {
				before := count()
				r := o.token(t, o.refreshGrant(refresh), st)
				if r.Code != 200 {
					t.Fatalf("refresh (basic %v) = %d: %v", st.basic, r.Code, r.Body)
				}
				if n := count() - before; n != want[dialect] {
					t.Errorf("a refresh (basic %v) ran %d statements, want %d", st.basic, n, want[dialect])
				}
				refresh = r.str("refresh_token")
			}
		})
	}
}
