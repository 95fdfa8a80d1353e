package db

import (
	"context"
	"sync"

	"gorm.io/gorm"
)

// Work that must wait for a commit (waking the delivery workers, whose
// claim would find nothing before it) is registered with AfterCommit from
// inside the transaction, and runs once the transaction that holds it has
// committed: the outermost one when the transaction is a savepoint of an
// ambient one (InTx), whose own end is not a commit. A savepoint that
// rolls back drops what it registered.

type hooksKey struct{}

// commitHooks are the functions to run after one transaction commits.
type commitHooks struct {
	mu  sync.Mutex
	fns []func()
}

func (h *commitHooks) add(fns ...func()) {
	if h == nil {
		for _, fn := range fns {
			fn()
		}
		return
	}
	h.mu.Lock()
	h.fns = append(h.fns, fns...)
	h.mu.Unlock()
}

func (h *commitHooks) take() []func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	fns := h.fns
	h.fns = nil
	return fns
}

func (h *commitHooks) run() {
	for _, fn := range h.take() {
		fn()
	}
}

func hooksOf(ctx context.Context) *commitHooks {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(hooksKey{}).(*commitHooks)
	return h
}

// AfterCommit runs fn once the transaction tx runs in has committed: tx is
// the handle Tx or InTx gave (or one derived from it with its context).
// Outside a transaction of this package, fn runs at once.
func AfterCommit(tx *gorm.DB, fn func()) {
	var ctx context.Context
	if tx != nil && tx.Statement != nil {
		ctx = tx.Statement.Context
	}
	hooksOf(ctx).add(fn)
}

// Tx runs fn in a transaction bound to ctx (a savepoint of the ambient
// transaction when ctx carries one, see InTx): committed when fn returns nil,
// rolled back otherwise (and on panic); the functions given to AfterCommit
// inside it run after the commit (after the ambient transaction's, for a
// savepoint). Nested calls on the tx handle use savepoints. On SQLite the
// transaction holds the database write lock from BEGIN on, so keep it
// short, never wait on the network inside it, and use only tx inside fn: a
// write through another handle would wait for the very lock fn holds
// (until busy_timeout, then SQLITE_BUSY).
func (d *DB) Tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	h := &commitHooks{}
	err := d.DB.WithContext(context.WithValue(ctx, hooksKey{}, h)).Transaction(fn)
	if err != nil {
		return err
	}
	if ambientOf(ctx) != nil {
		hooksOf(ctx).add(h.take()...) // the savepoint's: run at the ambient commit
		return nil
	}
	h.run()
	return nil
}
