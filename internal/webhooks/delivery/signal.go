package delivery

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Signal is the in-process wake-up: Notify never blocks, and any number of
// notifications before the worker looks collapse into one.
type Signal struct{ ch chan struct{} }

// NewSignal returns a ready Signal.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{}, 1)} }

// Notify wakes the worker.
func (s *Signal) Notify() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// C is the channel the worker waits on.
func (s *Signal) C() <-chan struct{} { return s.ch }

var _ outbox.Notifier = (*Signal)(nil)

// listen holds one PostgreSQL connection in LISTEN on outbox.NotifyChannel
// and turns notifications (sent at commit by outbox.Emit, from any replica)
// into wake-ups. It reconnects after errors; polling covers the gaps.
func (w *Worker) listen() {
	for w.runCtx.Err() == nil {
		err := w.listenOnce()
		if w.runCtx.Err() != nil {
			return
		}
		w.logger.Warn("listen for deliveries; polling meanwhile", "err", err)
		select {
		case <-w.runCtx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (w *Worker) listenOnce() error {
	if w.listenURL != "" {
		return w.listenDirect()
	}
	sqlDB, err := w.db.DB.DB()
	if err != nil {
		return err
	}
	conn, err := sqlDB.Conn(w.runCtx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("delivery: LISTEN needs the pgx driver")
		}
		pc := sc.Conn()
		if _, err := pc.Exec(w.runCtx, "LISTEN "+outbox.NotifyChannel); err != nil {
			return err
		}
		w.signal.Notify() // catch up on anything committed before LISTEN
		for {
			if _, err := pc.WaitForNotification(w.runCtx); err != nil {
				// Never hand a LISTENing (or broken) connection back to
				// the pool.
				return errors.Join(err, driver.ErrBadConn)
			}
			w.signal.Notify()
		}
	})
}

// listenDirect LISTENs on a connection of its own to listenURL
// (FINSVC_DATABASE_DIRECT_URL): behind a transaction pooler a pooled
// connection goes back to the pool after each statement, and the
// notifications with it.
func (w *Worker) listenDirect() error {
	pc, err := pgx.Connect(w.runCtx, w.listenURL)
	if err != nil {
		return err
	}
	defer pc.Close(context.WithoutCancel(w.runCtx))
	if _, err := pc.Exec(w.runCtx, "LISTEN "+outbox.NotifyChannel); err != nil {
		return err
	}
	w.signal.Notify() // catch up on anything committed before LISTEN
	for {
		if _, err := pc.WaitForNotification(w.runCtx); err != nil {
			return err
		}
		w.signal.Notify()
	}
}
