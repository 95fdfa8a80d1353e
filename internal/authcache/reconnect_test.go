package authcache

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/testdb"
)

// retryLog keeps the retry_in of every "listener lost" line.
type retryLog struct {
	mu    sync.Mutex
	delay []time.Duration
}

func (l *retryLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *retryLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *retryLog) WithGroup(string) slog.Handler            { return l }
func (l *retryLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "retry_in" {
			l.mu.Lock()
			l.delay = append(l.delay, a.Value.Duration())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *retryLog) delays() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.delay...)
}

// After a reconnect that succeeded, the next loss waits the shortest delay
// again: a connection lost (its backend terminated, as in a failover) three
// times, each after the listener was live again, waits minReconnect each
// time instead of a delay that doubles with every failover.
func TestReconnectDelayResetsAfterReconnect(t *testing.T) {
	d := testdb.Postgres(t)
	c := New(&fakeAuth{valid: map[string]bool{}}, time.Minute, 10)
	logs := &retryLog{}
	lctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.ListenPostgres(lctx, pgDSN(t, d), slog.New(logs)) }()
	t.Cleanup(func() { cancel(); <-done })

	for i := 1; i <= 3; i++ {
		waitFor(t, "the listener live", c.live.Load)
		var n int64
		if err := d.DB.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = ?`, ApplicationName).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("terminated %d listeners; want 1", n)
		}
		waitFor(t, "the loss logged", func() bool { return len(logs.delays()) == i })
	}
	for i, got := range logs.delays() {
		if got != minReconnect {
			t.Errorf("loss %d after a live connection: retry in %v; want %v", i+1, got, minReconnect)
		}
	}
}
