package delivery_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/delivery"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// failedRecords counts the worker's "record delivery outcome" errors.
type failedRecords struct{ n atomic.Int64 }

func (l *failedRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *failedRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *failedRecords) WithGroup(string) slog.Handler            { return l }
func (l *failedRecords) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "record delivery outcome" {
		l.n.Add(1)
	}
	return nil
}

// An attempt whose outcome could not be recorded because the database went
// away records it as soon as the database answers again: the row leaves
// delivering while the worker's clock still stands before the lease's end
// (it never moves in this test), not when the lease expires. PostgreSQL:
// the database is taken down (testdb.TakeDown) while the attempt is in
// flight; SQLite: another connection holds the write lock meanwhile.
func TestOutcomeRecordedWhenTheDatabaseReturns(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		release := make(chan struct{})
		rc.arrived = make(chan string, 1)
		rc.hold = func(string) { <-release }
		f.register(outbox.ActCreated, rc.URL+"/hook")
		ids := f.emit(outbox.ActCreated, 1, nil, nil)
		clk := newClock()
		box, err := sealing.New(keyring.MustNew(f.cfg.Secret))
		if err != nil {
			t.Fatal(err)
		}
		logs := &failedRecords{}
		w, err := delivery.NewWorker(d, box, f.cfg, slog.New(logs), delivery.WithNow(clk.Now), delivery.WithRand(fixedRand))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := w.RunOnce(f.ctx); done <- err }()
		select {
		case <-rc.arrived:
		case <-time.After(20 * time.Second):
			t.Fatal("the attempt never reached the receiver")
		}
		claimedUntil := clk.Now()

		back := databaseAway(t, d)
		close(release) // the attempt ends while the database is away
		deadline := time.Now().Add(30 * time.Second)
		for logs.n.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the record never failed while the database was away")
			}
			time.Sleep(10 * time.Millisecond)
		}
		back()

		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the outcome was not recorded after the database came back")
		}
		if r := f.row(ids[0]); r.Status != outbox.Succeeded || r.Attempts != 1 {
			t.Fatalf("delivery %s after %d attempts; want succeeded after 1", r.Status, r.Attempts)
		}
		if !clk.Now().Equal(claimedUntil) {
			t.Fatal("the worker's clock moved: the lease could have expired")
		}
	})
}

// databaseAway makes d refuse the worker's writes until the returned
// function runs.
func databaseAway(t *testing.T, d *db.DB) (back func()) {
	t.Helper()
	if d.Dialect == db.Postgres {
		return testdb.TakeDown(t, d)
	}
	var path string
	var seq int
	var name string
	if err := d.DB.Raw("PRAGMA database_list").Row().Scan(&seq, &name, &path); err != nil {
		t.Fatal(err)
	}
	other, err := db.Open(context.Background(), "sqlite:"+path, "", testdb.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	holding, free := make(chan struct{}), make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		ended <- other.Tx(context.Background(), func(tx *gorm.DB) error {
			close(holding) // BEGIN IMMEDIATE: the write lock is ours
			<-free
			return nil
		})
	}()
	<-holding
	return func() {
		close(free)
		if err := <-ended; err != nil {
			t.Fatal(err)
		}
	}
}

// claimErrors counts the worker's "claim deliveries" errors.
type claimErrors struct{ n atomic.Int64 }

func (l *claimErrors) Enabled(context.Context, slog.Level) bool { return true }
func (l *claimErrors) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *claimErrors) WithGroup(string) slog.Handler            { return l }
func (l *claimErrors) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "claim deliveries" {
		l.n.Add(1)
	}
	return nil
}

// A claim whose COMMIT was applied but whose answer was lost (the primary
// failed over under it) leaves rows leased to a worker that never saw
// them. Once a claim has failed, the worker hands back every row leased to
// it that it is not attempting, as soon as the database answers: here the
// rows are leased to the worker for an hour, as such a claim leaves them,
// and a claim fails while the database is away; they are delivered within
// seconds of its return, not when the lease ends.
func TestOrphanedLeasesHandedBackAfterAFailedClaim(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := newFixture(t, d)
		rc := newReceiver(t, false)
		f.register(outbox.ActCreated, rc.URL+"/hook")
		ids := f.emit(outbox.ActCreated, 3, nil, nil)
		const owner = "worker-whose-claim-answer-was-lost"
		hour := time.Now().Add(time.Hour)
		if err := d.DB.Exec(`UPDATE deliveries SET status = ?, lease_owner = ?, lease_expires_at = ?`, string(outbox.Delivering), owner, hour).Error; err != nil {
			t.Fatal(err)
		}
		logs := &claimErrors{}
		box, err := sealing.New(keyring.MustNew(f.cfg.Secret))
		if err != nil {
			t.Fatal(err)
		}
		w, err := delivery.NewWorker(d, box, f.cfg, slog.New(logs), delivery.WithOwner(owner), delivery.WithPollInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		back := databaseAway(t, d)
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(context.Background()) })
		deadline := time.Now().Add(30 * time.Second)
		for logs.n.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no claim failed while the database was away")
			}
			time.Sleep(10 * time.Millisecond)
		}
		back()
		// Read as the worker does, through the same pool: behind a
		// pooler the first logins after the outage may still be refused
		// for a moment (server_login_retry), which is not the answer.
		undelivered := func() (n int64, err error) {
			err = d.DB.Raw(`SELECT count(*) FROM delivery_log WHERE status <> ?`, string(outbox.Succeeded)).Scan(&n).Error
			return n, err
		}
		deadline = time.Now().Add(30 * time.Second)
		for {
			n, err := undelivered()
			if err == nil && n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d deliveries not delivered 30 s after the database returned (%v)", n, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, id := range ids {
			if r := f.row(id); r.Status != outbox.Succeeded {
				t.Fatalf("delivery of %s: %+v, want succeeded", id, r)
			}
		}
		if got := len(rc.requests()); got != 3 {
			t.Fatalf("%d requests, want 3", got)
		}
	})
}
