package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// The outbox claim at scale: how fast the delivery workers can claim (and
// finish) deliveries from a queue of 10,000 due ones with a long delivered
// history in the tables, against the same queue with no history. Each side is a database
// of its own, beside the one the server runs on: nothing but the history
// differs between them, and the server's own delivery worker cannot take
// the queue. Rounds alternate between the two so that drift on a shared
// machine hits both alike.
const (
	claimHooks   = 20     // registrations the queue is spread over
	claimPending = 10_000 // due deliveries in the queue
	claimRounds  = 3      // alternating rounds per history size (-claim-rounds)
	// claimsPerRound × claimSlots (1,600) rows are claimed per round.
	claimsPerRound = 50
	// As the worker asks with the default configuration: its free slots
	// (FINSVC_WEBHOOK_CONCURRENCY 32, all free between claims here) and
	// FINSVC_WEBHOOK_ENDPOINT_CONCURRENCY 2, so 20 registrations fill a
	// claim.
	claimSlots = 32
	claimCap   = 2
)

// claimDB is one side of the comparison: a fresh database with one tenant,
// claimHooks registrations, claimPending due deliveries and have delivered
// ones.
type claimDB struct {
	d    *db.DB
	tid  int64
	have int
	done func()
}

func newClaimDB(ctx context.Context, databaseURL string) (*claimDB, error) {
	d, _, done, err := openFresh(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	c := &claimDB{d: d, done: done}
	tn, err := tenant.NewStore(d).Create(ctx, "claims", "Claims")
	if err != nil {
		done()
		return nil, err
	}
	c.tid = tn.ID
	for _, q := range []string{
		`INSERT INTO users (tenant_id, id, email, name, role, password_hash) VALUES (?, 1, 'c@claims.example.com', 'C', 'admin', '!')`,
		`INSERT INTO webhooks (tenant_id, id, event, target, secret_ciphertext, created_by_user_id)
		 SELECT ?, g, 'act.created', 'http://127.0.0.1:9/h' || g, 'unused', 1 FROM generate_series(1, ` + fmt.Sprint(claimHooks) + `) g`,
		// The queue: claimPending events, one pending delivery each, due a
		// minute ago, spread evenly over the registrations. Their ids are
		// md5('pending' || g) so that requeue can find them again.
		`INSERT INTO events (tenant_id, id, kind, payload, occurred_at)
		 SELECT ?, md5('pending' || g)::uuid, 'act.created', '{}', now() FROM generate_series(1, ` + fmt.Sprint(claimPending) + `) g`,
		`INSERT INTO deliveries (tenant_id, id, webhook_id, event_id, status, next_attempt_at)
		 SELECT ?, md5('pending' || g)::uuid, 1 + g % ` + fmt.Sprint(claimHooks) + `, md5('pending' || g)::uuid, 'pending', now() - interval '1 minute'
		 FROM generate_series(1, ` + fmt.Sprint(claimPending) + `) g`,
	} {
		if err := d.WithContext(ctx).Exec(q, c.tid).Error; err != nil {
			done()
			return nil, fmt.Errorf("claim fixture: %w", err)
		}
	}
	return c, c.tidy(ctx)
}

// newClaimPair creates both sides of the comparison (claimBench): empty
// keeps no history, full grows one. done closes and drops both.
func newClaimPair(ctx context.Context, databaseURL string) (empty, full *claimDB, done func(), err error) {
	if empty, err = newClaimDB(ctx, databaseURL); err != nil {
		return nil, nil, nil, err
	}
	if full, err = newClaimDB(ctx, databaseURL); err != nil {
		empty.done()
		return nil, nil, nil, err
	}
	return empty, full, func() { full.done(); empty.done() }, nil
}

// claimIntro describes the claim table's rows.
func claimIntro(rounds int) string {
	return fmt.Sprintf("Outbox claim: a queue of %d due deliveries over %d registrations; a round is %d outbox.Claim calls (N %d, cap %d), each followed by outbox.Finish of its rows; %d alternating rounds per row:\n\n",
		claimPending, claimHooks, claimsPerRound, claimSlots, claimCap, rounds)
}

// grow adds delivered history (one event and one succeeded delivery per
// row, over the same registrations, within the retention) up to want rows.
// Finished deliveries are the rows of delivery_history (migration 00090).
func (c *claimDB) grow(ctx context.Context, want int) error {
	if want > c.have {
		for _, q := range []string{
			`INSERT INTO events (tenant_id, id, kind, payload, occurred_at)
			 SELECT ?, md5('done' || g)::uuid, 'act.created', '{"act":{"uuid":"00000000-0000-4000-8000-000000000000"}}', now() - g * interval '1 second'
			 FROM generate_series(?::bigint + 1, ?::bigint) g`,
			`INSERT INTO delivery_history (tenant_id, id, webhook_id, event_id, status, attempts, last_status_code, last_attempt_at, created_at, updated_at)
			 SELECT ?, md5('done' || g)::uuid, 1 + g % ` + fmt.Sprint(claimHooks) + `, md5('done' || g)::uuid, 'succeeded', 1, 200,
			        now() - g * interval '1 second', now() - g * interval '1 second', now() - g * interval '1 second'
			 FROM generate_series(?::bigint + 1, ?::bigint) g`,
		} {
			if err := c.d.WithContext(ctx).Exec(q, c.tid, c.have, want).Error; err != nil {
				return fmt.Errorf("claim history: %w", err)
			}
		}
		c.have = want
	}
	return c.tidy(ctx)
}

// tidy vacuums and analyzes the outbox tables, as autovacuum would have by
// the time a real history had grown, so that no round pays for the dead
// index entries of the previous one.
func (c *claimDB) tidy(ctx context.Context) error {
	return c.d.WithContext(ctx).Exec("VACUUM ANALYZE deliveries, delivery_history, events").Error
}

// requeue makes the queue's claimed rows pending and due again: the
// finished ones come back from delivery_history (as a redelivery brings
// them), any still leased are reset.
func (c *claimDB) requeue(ctx context.Context) error {
	err := c.d.WithContext(ctx).Exec(`WITH back AS (
		DELETE FROM delivery_history WHERE tenant_id = ? AND id IN (SELECT md5('pending' || g)::uuid FROM generate_series(1, ?::bigint) g)
		RETURNING tenant_id, id, webhook_id, event_id, created_at)
		INSERT INTO deliveries (tenant_id, id, webhook_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
		SELECT tenant_id, id, webhook_id, event_id, 'pending', 0, now() - interval '1 minute', created_at, now() FROM back`, c.tid, claimPending).Error
	if err != nil {
		return err
	}
	err = c.d.WithContext(ctx).Exec(`UPDATE deliveries SET status = 'pending', attempts = 0, lease_owner = NULL, lease_expires_at = NULL,
		next_attempt_at = now() - interval '1 minute', last_status_code = NULL, last_attempt_at = NULL
		WHERE tenant_id = ? AND id IN (SELECT md5('pending' || g)::uuid FROM generate_series(1, ?::bigint) g) AND status <> 'pending'`, c.tid, claimPending).Error
	if err != nil {
		return err
	}
	return c.tidy(ctx)
}

// claimRound is one round of claims.
type claimRound struct {
	claims  []time.Duration // each outbox.Claim call
	claimed int
	wall    time.Duration // claims and finishes
}

// drain makes claimsPerRound claims the way the delivery worker does:
// outbox.Claim for its free slots, then outbox.Finish of each claimed row,
// concurrently, as a 200 answer records it (without the HTTP attempt in
// between). A round takes a sixth of the queue, so that more than 8,000
// due rows are always in the table; requeue then puts the taken rows back.
func (c *claimDB) drain(ctx context.Context) (claimRound, error) {
	var r claimRound
	const owner = "bench-claim"
	t0 := time.Now()
	for range claimsPerRound {
		now := time.Now()
		t := time.Now()
		rows, err := outbox.Claim(ctx, c.d, outbox.ClaimRequest{Owner: owner, N: claimSlots, EndpointCap: claimCap, Now: now, LeaseUntil: now.Add(time.Minute)})
		if err != nil {
			return r, err
		}
		r.claims = append(r.claims, time.Since(t))
		if len(rows) != claimSlots {
			return r, fmt.Errorf("claimed %d rows; want %d (the queue holds %d)", len(rows), claimSlots, claimPending)
		}
		r.claimed += len(rows)
		var wg sync.WaitGroup
		errs := make(chan error, len(rows))
		for _, row := range rows {
			wg.Go(func() {
				done := time.Now()
				u := outbox.Update{Status: outbox.Succeeded, Attempt: &outbox.Attempt{Number: row.Attempts + 1, At: done, StatusCode: 200, Excerpt: "ok"}}
				if _, err := outbox.Finish(ctx, c.d, row, owner, u, done, nil); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return r, err
		}
	}
	r.wall = time.Since(t0)
	return r, c.requeue(ctx)
}

// claimStats sums rounds: Claim latency percentiles, Claim calls per second
// of Claim time, and deliveries claimed and finished per second of wall
// time.
type claimStats struct {
	p50, p99             time.Duration
	claimsPerS, deliverS float64
}

func sumRounds(rs []claimRound) claimStats {
	var lat []time.Duration
	var claimTime, wall time.Duration
	claimed := 0
	for _, r := range rs {
		lat = append(lat, r.claims...)
		for _, l := range r.claims {
			claimTime += l
		}
		wall += r.wall
		claimed += r.claimed
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return claimStats{p50: Percentile(lat, 50), p99: Percentile(lat, 99),
		claimsPerS: float64(len(lat)) / claimTime.Seconds(), deliverS: float64(claimed) / wall.Seconds()}
}

// claimBench compares the queue's drain with history rows of delivered
// history against empty, and prints one row of the claim table.
func claimBench(ctx context.Context, empty, full *claimDB, history, rounds int, out io.Writer) error {
	if err := full.grow(ctx, history); err != nil {
		return err
	}
	// Warm both (connections, caches), untimed.
	for _, c := range []*claimDB{empty, full} {
		if _, err := c.drain(ctx); err != nil {
			return err
		}
	}
	// Rounds alternate empty, full, full, empty, … so that a load that
	// rises or falls during the row weighs on both sides alike.
	var er, fr []claimRound
	for i := range rounds {
		first, second := empty, full
		if i%2 == 1 {
			first, second = full, empty
		}
		for _, c := range []*claimDB{first, second} {
			r, err := c.drain(ctx)
			if err != nil {
				return fmt.Errorf("%d delivered (this side %d): %w", history, c.have, err)
			}
			if c == empty {
				er = append(er, r)
			} else {
				fr = append(fr, r)
			}
		}
	}
	e, f := sumRounds(er), sumRounds(fr)
	fmt.Fprintf(out, "| %d | %d | %s / %s | %s / %s | %.0f / %.0f | %.0f / %.0f | %+.1f %% |\n",
		history, claimPending, ms(e.p50), ms(f.p50), ms(e.p99), ms(f.p99), e.claimsPerS, f.claimsPerS, e.deliverS, f.deliverS,
		(f.claimsPerS/e.claimsPerS-1)*100)
	return nil
}

const claimTableHead = "| delivered history | pending | claim p50 (empty / history) | claim p99 | claims/s | deliveries claimed + finished/s | claims/s vs empty |\n|---:|---:|---:|---:|---:|---:|---:|\n"
