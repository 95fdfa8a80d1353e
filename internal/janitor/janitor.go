// Package janitor runs periodic maintenance in the background: the OAuth
// purge of expired state, the retention purge of old events,
// deliveries and fetch requests, and (Statistics) the refresh of SQLite's
// planner statistics. Every replica runs its own; the work each
// run does must be idempotent and safe beside other replicas' runs.
package janitor

import (
	"context"
	"sync"
	"time"

	"github.com/finsvc/finsvc/internal/tracing/suppress"
)

// Loop calls Run after FirstRun and then every Interval until Stop. A failed
// run is the Run function's to log; the loop retries at the next interval.
type Loop struct {
	// Interval between runs, FirstRun the delay before the first one (so
	// that a restart storm does not start with a burst of deletes).
	Interval, FirstRun time.Duration
	Run                func(ctx context.Context) error
	// Ran, when set, is called after each run (tests).
	Ran func(error)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs the loop in the background until Stop (or ctx ends). Calling it
// again while running does nothing.
func (l *Loop) Start(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTimer(l.FirstRun)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// Maintenance makes no trace: a run every few minutes per
			// replica, mostly finding nothing, would be most of an idle
			// service's traces. Its outcome is in the runs' logs.
			err := l.Run(suppress.Context(ctx))
			if l.Ran != nil {
				l.Ran(err)
			}
			t.Reset(l.Interval)
		}
	}()
}

// Stop ends the loop, cancelling a run in progress (a batch cancelled
// mid-way rolls back; the next run redoes it), and waits for it. It is safe
// to call more than once and without Start.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
