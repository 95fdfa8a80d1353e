package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// BenchmarkClaim times one claim (16 free slots, cap 2) with 1,000 and
// 10,000 due rows spread over 10 registrations of 2 tenants, one of which
// holds half the backlog. The claimed rows are put back (untimed) after
// each claim, so every claim sees the same queue.
//
//	FINSVC_TEST_DATABASE_URL=… go test -run '^$' -bench BenchmarkClaim ./internal/webhooks/outbox/
func BenchmarkClaim(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		for _, due := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/due=%d", dialect, due), func(b *testing.B) {
				benchClaim(b, testdb.Open(b, dialect), due)
			})
		}
	}
}

func benchClaim(b *testing.B, d *db.DB, due int) {
	now := time.Now().UTC().Truncate(time.Second)
	other, _ := testdb.NewTenant(b, d, "other")
	fs := []*fixture{newFixture(b, d), {t: b, d: d, ctx: other}}
	fs[1].userID = fs[1].nextID("users")
	if err := d.Table("users").Create(map[string]any{"tenant_id": tenant.ID(other), "id": fs[1].userID, "email": "o@other", "name": "O", "role": "member", "password_hash": "!"}).Error; err != nil {
		b.Fatal(err)
	}
	const hooks = 10
	for i := range hooks {
		f := fs[i%2]
		h := f.webhook(outbox.ActCreated, fmt.Sprintf("https://h%d.example/h", i), true, f.userID)
		n := due / 2 / (hooks - 1)
		if i == 0 {
			n = due - (due/2/(hooks-1))*(hooks-1) // the backlog: the rest
		}
		f.queue(h, n, now.Add(-time.Hour))
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows, err := outbox.Claim(ctx, d, outbox.ClaimRequest{Owner: "bench", N: 16, EndpointCap: 2, Now: now, LeaseUntil: now.Add(time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) != 16 {
			b.Fatalf("claimed %d rows; want 16", len(rows))
		}
		b.StopTimer()
		if err := d.Table("deliveries").Where("status = ?", "delivering").
			Updates(map[string]any{"status": "pending", "lease_owner": nil, "lease_expires_at": nil}).Error; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
