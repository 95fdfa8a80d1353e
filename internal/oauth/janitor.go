package oauth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/janitor"
	"github.com/finsvc/finsvc/internal/oauth/store"
)

// Janitor defaults.
const (
	JanitorInterval = 10 * time.Minute
	JanitorFirstRun = time.Minute
	// JanitorGrace keeps used codes and rotated or revoked refresh tokens a
	// day past their expiry, so that a replay still revokes the family
	// (store.PurgePolicy.Grace).
	JanitorGrace = 24 * time.Hour
)

// Janitor periodically (internal/janitor) deletes expired OAuth state of every tenant
// (store.Purge): codes, PKCE requests, access and refresh tokens and browser
// sessions. Every replica may run one: the deletes are idempotent and
// batches of concurrent janitors skip each other's rows.
type Janitor struct {
	// Interval between runs, FirstRun the delay before the first one (so
	// that a restart storm does not start with a burst of deletes).
	Interval, FirstRun time.Duration
	// Grace and Batch are passed to store.PurgePolicy.
	Grace time.Duration
	Batch int
	// Now is the clock the expiry cut-offs are computed from.
	Now func() time.Time

	store *store.Store
	log   *slog.Logger

	ran func(store.PurgeStats, error) // tests: called after each background run

	mu   sync.Mutex
	loop *janitor.Loop
}

// NewJanitor returns a janitor over d with the default schedule; adjust
// the fields before Start.
func NewJanitor(d *db.DB, log *slog.Logger) *Janitor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Janitor{Interval: JanitorInterval, FirstRun: JanitorFirstRun, Grace: JanitorGrace, Batch: store.DefaultPurgeBatch,
		Now: time.Now, store: store.New(d), log: log}
}

// RunOnce purges now and logs what went.
func (j *Janitor) RunOnce(ctx context.Context) (store.PurgeStats, error) {
	st, err := j.store.Purge(ctx, store.PurgePolicy{Now: j.Now(), Grace: j.Grace, Batch: j.Batch})
	if err != nil {
		if ctx.Err() == nil {
			j.log.Error("oauth janitor: purge failed", "err", err, "deleted", st.Total())
		}
		return st, err
	}
	if st.Total() > 0 {
		j.log.Info("oauth janitor: purged expired state", "codes", st.Codes, "pkce", st.PKCE,
			"access_tokens", st.AccessTokens, "refresh_tokens", st.RefreshTokens, "sessions", st.Sessions, "flashes", st.Flashes)
	}
	return st, nil
}

// Start runs the janitor in the background until Stop (or ctx ends). A
// failed run is logged and retried at the next interval.
func (j *Janitor) Start(ctx context.Context) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.loop != nil {
		return
	}
	j.loop = &janitor.Loop{Interval: j.Interval, FirstRun: j.FirstRun, Run: func(ctx context.Context) error {
		st, err := j.RunOnce(ctx)
		if j.ran != nil {
			j.ran(st, err)
		}
		return err
	}}
	j.loop.Start(ctx)
}

// Stop ends the background loop, cancelling a run in progress, and waits
// for it. It is safe to call more than once and without Start.
func (j *Janitor) Stop() {
	j.mu.Lock()
	l := j.loop
	j.mu.Unlock()
	if l != nil {
		l.Stop()
	}
}
