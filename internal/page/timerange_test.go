package page_test

import (
	"flag"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"pgregory.net/rapid"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// rapid's defaults unless given on the command line: a fixed seed, so a
// run is repeatable, and enough cases to cross block boundaries in every
// way the generator can (a quarter under the race detector, which CI
// runs the tests with).
func fixRapid(t *testing.T, checks int) {
	t.Helper()
	if raceEnabled {
		checks /= 4
	}
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, v := range map[string]string{"rapid.seed": "20261128", "rapid.checks": fmt.Sprint(checks)} {
		if f := flag.Lookup(name); f != nil && !given[name] {
			if err := f.Value.Set(v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// row is one generated row of a numbered list.
type row struct {
	num  int64
	at   time.Time
	kind string // events: the kind; audit_log: the action
	user int64  // audit_log: the actor
}

// genRows draws a tenant's rows: increasing numbers with runs and gaps
// (so that blocks of 1,024 numbers hold one row or many, and a list
// crosses many of them), and times out of the numbers' order by up to a
// disorder drawn per case, from none to any time of the whole span.
func genRows(t *rapid.T, kinds []string) []row {
	n := rapid.IntRange(0, 250).Draw(t, "rows")
	disorder := rapid.SampledFrom([]time.Duration{0, time.Second, time.Minute, time.Hour, 24 * time.Hour, 1000 * time.Hour}).Draw(t, "disorder")
	base := time.Now().UTC().Add(-400 * 24 * time.Hour).Truncate(time.Second)
	num := rapid.Int64Range(1, 3000).Draw(t, "first")
	rows := make([]row, n)
	for i := range rows {
		at := base.Add(time.Duration(num) * time.Second)
		if disorder > 0 {
			at = at.Add(time.Duration(rapid.Int64Range(-int64(disorder), int64(disorder)).Draw(t, "jitter")))
		}
		// Ties: whole seconds often, microseconds otherwise (what both
		// dialects keep).
		if rapid.Bool().Draw(t, "whole") {
			at = at.Truncate(time.Second)
		}
		rows[i] = row{num: num, at: at.Truncate(time.Microsecond), kind: rapid.SampledFrom(kinds).Draw(t, "kind"), user: rapid.Int64Range(1, 3).Draw(t, "user")}
		num += rapid.SampledFrom([]int64{1, 1, 1, 2, 7, 300, 1024, 1500, 5000}).Draw(t, "gap")
	}
	return rows
}

// genRange draws a time range from the rows' times (exactly, a
// microsecond either side), from anywhere in their span, or beyond it.
func genRange(t *rapid.T, rows []row) page.TimeRange {
	bound := func(label string) *time.Time {
		if rapid.IntRange(0, 3).Draw(t, label+"?") == 0 {
			return nil
		}
		var at time.Time
		if len(rows) > 0 && rapid.Bool().Draw(t, label+" at a row") {
			at = rapid.SampledFrom(rows).Draw(t, label+" row").at.
				Add(time.Duration(rapid.IntRange(-1, 1).Draw(t, label+" µs")) * time.Microsecond)
		} else {
			at = time.Now().UTC().Add(-time.Duration(rapid.Int64Range(0, 500*24).Draw(t, label+" hours ago")) * time.Hour)
		}
		return &at
	}
	return page.TimeRange{From: bound("from"), Until: bound("until")}
}

// stats tell that the cases were not vacuous: bounds that kept some rows
// and dropped others.
type stats struct{ queries, kept, dropped atomic.Int64 }

// checkPages walks every page of a list both ways and compares with want,
// the plain filter's rows newest first: forward from the newest by the
// cursor after the last row, backward from the oldest by the cursor
// before the first, and one page each way from a cursor anywhere.
func checkPages(t *rapid.T, want []int64, all []int64, list func(after, before *int64, limit int) ([]int64, bool)) {
	limit := rapid.SampledFrom([]int{1, 2, 3, 7, 25, 100}).Draw(t, "limit")
	var got []int64
	var after *int64
	for range len(want) + 2 {
		p, more := list(after, nil, limit)
		got = append(got, p...)
		if !more {
			break
		}
		if len(p) == 0 {
			t.Fatalf("an empty page with more after %v", after)
		}
		after = &p[len(p)-1]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("forward pages (limit %d):\n got %v\nwant %v", limit, got, want)
	}
	if len(want) > 0 {
		got = nil
		before := &want[len(want)-1]
		for range len(want) + 2 {
			p, more := list(nil, before, limit)
			got = append(slices.Clone(p), got...)
			if !more {
				break
			}
			before = &p[0]
		}
		if w := want[:len(want)-1]; !slices.Equal(got, w) {
			t.Fatalf("backward pages from the oldest (limit %d):\n got %v\nwant %v", limit, got, w)
		}
	}
	if len(all) == 0 {
		return
	}
	c := rapid.SampledFrom(all).Draw(t, "cursor")
	var older, newer []int64
	for _, n := range want {
		if n < c {
			older = append(older, n)
		} else if n > c {
			newer = append(newer, n)
		}
	}
	p, more := list(&c, nil, limit)
	if w := older[:min(limit, len(older))]; !slices.Equal(p, w) || more != (len(older) > limit) {
		t.Fatalf("after %d (limit %d): got %v more %v, want %v more %v", c, limit, p, more, w, len(older) > limit)
	}
	p, more = list(nil, &c, limit)
	if w := newer[max(0, len(newer)-limit):]; !slices.Equal(p, w) || more != (len(newer) > limit) {
		t.Fatalf("before %d (limit %d): got %v more %v, want %v more %v", c, limit, p, more, w, len(newer) > limit)
	}
}

// plain is the list's filter as it was before the number bounds: the
// time predicates alone, on the same database, newest first.
func plain(t *rapid.T, q *gorm.DB, l page.Numbered, r page.TimeRange) []int64 {
	var nums []int64
	if err := r.Where(q, l.Time).Order(l.Number+" DESC").Pluck(l.Number, &nums).Error; err != nil {
		t.Fatal(err)
	}
	return nums
}

// A time-bounded page of the events returns exactly the events of the
// time predicates alone, in the same order, on every page, both ways, with
// and without a type, whatever the disorder of times and numbers, after
// purges and with unnumbered (example) events beside: the number bounds
// the blocks imply never drop or add an event.
func TestEventsTimeBoundsKeepThePlainFilter(t *testing.T) {
	fixRapid(t, 200)
	kinds := []string{outbox.ActCreated, outbox.ClientUpdated, outbox.WebhookTest}
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		var st stats
		var cases atomic.Int64
		rapid.Check(t, func(rt *rapid.T) {
			ctx, tn := testdb.NewTenant(t, d, fmt.Sprintf("ev-%d", cases.Add(1)))
			rows := genRows(rt, kinds)
			ids := map[int64]string{}
			recs := make([]map[string]any, 0, len(rows)+1)
			for _, r := range rows {
				ids[r.num] = uuid.NewString()
				recs = append(recs, map[string]any{"tenant_id": tn.ID, "id": ids[r.num], "kind": r.kind, "payload": "{}", "occurred_at": r.at, "seq": r.num})
			}
			// An example event: unnumbered, never listed, in no block.
			recs = append(recs, map[string]any{"tenant_id": tn.ID, "id": uuid.NewString(), "kind": outbox.ActCreated, "payload": "{}", "occurred_at": time.Now().UTC().Add(-500 * 24 * time.Hour), "seq": nil})
			if err := d.Table("events").CreateInBatches(recs, 100).Error; err != nil {
				rt.Fatal(err)
			}
			// The retention purge (the oldest by time), a few arbitrary
			// deletes, and a hand-written change of an event's time: the
			// blocks keep their times, wider than what remains.
			if len(rows) > 0 && rapid.Bool().Draw(rt, "purge") {
				cut := rapid.SampledFrom(rows).Draw(rt, "purge before").at
				if err := d.Exec("DELETE FROM events WHERE tenant_id = ? AND occurred_at < ?", tn.ID, cut).Error; err != nil {
					rt.Fatal(err)
				}
			}
			for range rapid.IntRange(0, 3).Draw(rt, "deletes") {
				if len(rows) > 0 {
					if err := d.Exec("DELETE FROM events WHERE tenant_id = ? AND seq = ?", tn.ID, rapid.SampledFrom(rows).Draw(rt, "delete").num).Error; err != nil {
						rt.Fatal(err)
					}
				}
			}
			if len(rows) > 0 && rapid.Bool().Draw(rt, "update") {
				at := time.Now().UTC().Add(-time.Duration(rapid.Int64Range(0, 500*24).Draw(rt, "moved hours ago")) * time.Hour)
				if err := d.Exec("UPDATE events SET occurred_at = ? WHERE tenant_id = ? AND seq = ?", at, tn.ID, rapid.SampledFrom(rows).Draw(rt, "moved").num).Error; err != nil {
					rt.Fatal(err)
				}
			}
			var all []int64
			if err := d.Table("events").Where("tenant_id = ? AND seq IS NOT NULL", tn.ID).Order("seq DESC").Pluck("seq", &all).Error; err != nil {
				rt.Fatal(err)
			}
			for range 3 {
				r := genRange(rt, rows)
				kind := rapid.SampledFrom(append([]string{""}, kinds...)).Draw(rt, "type")
				q := d.Table("events").Where("tenant_id = ? AND seq IS NOT NULL", tn.ID)
				if kind != "" {
					q = q.Where("kind = ?", kind)
				}
				want := plain(rt, q, page.Events, r)
				st.queries.Add(1)
				st.kept.Add(int64(len(want)))
				st.dropped.Add(int64(len(all) - len(want)))
				checkPages(rt, want, all, func(after, before *int64, limit int) ([]int64, bool) {
					f := outbox.EventFilter{Kind: kind, From: r.From, Until: r.Until, Limit: limit}
					if after != nil {
						id := uuid.MustParse(ids[*after])
						f.After = &id
					}
					if before != nil {
						id := uuid.MustParse(ids[*before])
						f.Before = &id
					}
					evs, more, err := outbox.ListEvents(ctx, d.DB, f)
					if err != nil {
						rt.Fatal(err)
					}
					nums := make([]int64, len(evs))
					for i, e := range evs {
						nums[i] = e.Seq
					}
					return nums, more
				})
			}
		})
		t.Logf("%d cases, %d ranges: %d events kept, %d dropped by the time bounds", cases.Load(), st.queries.Load(), st.kept.Load(), st.dropped.Load())
		if st.kept.Load() == 0 || st.dropped.Load() == 0 {
			t.Error("vacuous: no range kept or dropped an event")
		}
	})
}

// The audit log likewise: time-bounded pages are exactly those of the
// time predicates alone, with an action or an actor filter or none.
func TestAuditTimeBoundsKeepThePlainFilter(t *testing.T) {
	fixRapid(t, 200)
	actions := []string{audit.SignIn, audit.UserCreated, audit.WebhookCreated}
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		var st stats
		var cases atomic.Int64
		rapid.Check(t, func(rt *rapid.T) {
			ctx, tn := testdb.NewTenant(t, d, fmt.Sprintf("au-%d", cases.Add(1)))
			rows := genRows(rt, actions)
			recs := make([]audit.Row, len(rows))
			for i, r := range rows {
				u := r.user
				recs[i] = audit.Row{TenantID: tn.ID, ID: r.num, OccurredAt: r.at, ActorType: audit.ActorUser, ActorUserID: &u, Action: r.kind, Outcome: audit.Success}
			}
			if len(recs) > 0 {
				if err := d.CreateInBatches(recs, 100).Error; err != nil {
					rt.Fatal(err)
				}
			}
			// The retention purge: the rows are older than the log's
			// minimum retention, so the database lets them go.
			if len(rows) > 0 && rapid.Bool().Draw(rt, "purge") {
				cut := rapid.SampledFrom(rows).Draw(rt, "purge before").at
				if err := d.Exec("DELETE FROM audit_log WHERE tenant_id = ? AND occurred_at < ?", tn.ID, cut).Error; err != nil {
					rt.Fatal(err)
				}
			}
			var all []int64
			if err := d.Table("audit_log").Where("tenant_id = ?", tn.ID).Order("id DESC").Pluck("id", &all).Error; err != nil {
				rt.Fatal(err)
			}
			for range 3 {
				r := genRange(rt, rows)
				f := audit.Filter{From: r.From, Until: r.Until}
				q := d.Table("audit_log").Where("tenant_id = ?", tn.ID)
				switch rapid.IntRange(0, 2).Draw(rt, "filter") {
				case 1:
					f.Action = rapid.SampledFrom(actions).Draw(rt, "action")
					q = q.Where("action = ?", f.Action)
				case 2:
					u := rapid.Int64Range(1, 3).Draw(rt, "actor")
					f.ActorUserID = &u
					q = q.Where("actor_user_id = ?", u)
				}
				want := plain(rt, q, page.AuditLog, r)
				st.queries.Add(1)
				st.kept.Add(int64(len(want)))
				st.dropped.Add(int64(len(all) - len(want)))
				checkPages(rt, want, all, func(after, before *int64, limit int) ([]int64, bool) {
					g := f
					g.After, g.Before, g.Limit = after, before, limit
					recs, more, err := audit.List(ctx, d.DB, g)
					if err != nil {
						rt.Fatal(err)
					}
					nums := make([]int64, len(recs))
					for i, r := range recs {
						nums[i] = r.ID
					}
					return nums, more
				})
			}
			// An export reads the same records, oldest first.
			var exported []int64
			r := genRange(rt, rows)
			if err := audit.NewLog(d).Export(ctx, audit.Filter{From: r.From, Until: r.Until}, func(x audit.Row) error {
				exported = append(exported, x.ID)
				return nil
			}); err != nil {
				rt.Fatal(err)
			}
			want := plain(rt, d.Table("audit_log").Where("tenant_id = ?", tn.ID), page.AuditLog, r)
			slices.Reverse(want)
			if !slices.Equal(exported, want) {
				rt.Fatalf("export:\n got %v\nwant %v", exported, want)
			}
		})
		t.Logf("%d cases, %d ranges: %d records kept, %d dropped by the time bounds", cases.Load(), st.queries.Load(), st.kept.Load(), st.dropped.Load())
		if st.kept.Load() == 0 || st.dropped.Load() == 0 {
			t.Error("vacuous: no range kept or dropped a record")
		}
	})
}

// Every row lies within its block's times when writers race: events
// emitted by concurrent transactions with times of their choosing (any
// order), and audit records written concurrently with the clock, across a
// block boundary. This is what the number bounds rest on.
func TestTimeBlocksHoldEveryRowUnderConcurrentWriters(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "race")
		for _, seq := range []string{outbox.SeqName, "audit_log"} {
			if err := d.Exec("INSERT INTO id_sequences (tenant_id, name, next_id) VALUES (?, ?, 1000)", tn.ID, seq).Error; err != nil {
				t.Fatal(err)
			}
		}
		const writers, each = 6, 15
		base := time.Now().UTC().Add(-time.Hour)
		var ob outbox.Outbox
		errs := make(chan error, 2*writers)
		for w := range writers {
			go func() {
				var err error
				for i := range each {
					at := base.Add(time.Duration((w*7919+i*104729)%3600) * time.Second)
					if err = d.Tx(ctx, func(tx *gorm.DB) error {
						_, err := ob.Emit(ctx, tx, outbox.Event{Kind: outbox.ClientUpdated, OccurredAt: at, Data: map[string]int{"i": i}})
						return err
					}); err != nil {
						break
					}
				}
				errs <- err
			}()
			go func() {
				var err error
				for range each {
					if err = audit.RecordAlone(ctx, d, audit.Entry{Action: audit.SignIn, Actor: audit.UserActor(1)}); err != nil {
						break
					}
				}
				errs <- err
			}()
		}
		for range 2 * writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range []page.Numbered{page.Events, page.AuditLog} {
			var n, outside int64
			if err := d.Table(l.Table).Where("tenant_id = ? AND "+l.Number+" IS NOT NULL", tn.ID).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			if err := d.Raw(`SELECT count(*) FROM `+l.Table+` r WHERE r.tenant_id = ? AND r.`+l.Number+` IS NOT NULL AND NOT EXISTS (
				SELECT 1 FROM time_blocks b WHERE b.tenant_id = r.tenant_id AND b.list = ? AND b.block = r.`+l.Number+` >> 10
				AND b.min_at <= r.`+l.Time+` AND b.max_at >= r.`+l.Time+`)`, tn.ID, l.Table).Scan(&outside).Error; err != nil {
				t.Fatal(err)
			}
			var blocks int64
			if err := d.Table("time_blocks").Where("tenant_id = ? AND list = ?", tn.ID, l.Table).Count(&blocks).Error; err != nil {
				t.Fatal(err)
			}
			if n != writers*each || outside != 0 || blocks != 2 {
				t.Errorf("%s: %d rows (want %d), %d outside their block's times, %d blocks (want 2)", l.Table, n, writers*each, outside, blocks)
			}
		}
	})
}
