package db

import "time"

// PgxQueries is how many Query runs took the pgx path so far.
func PgxQueries() int64 { return pgxQueries.Load() }

// SetAmbientDeadline sets how long an outermost InTx may run, until the
// test ends.
func SetAmbientDeadline(t interface{ Cleanup(func()) }, d time.Duration) {
	old := ambientDeadline
	ambientDeadline = d
	t.Cleanup(func() { ambientDeadline = old })
}

// LockTimeout is how long a PostgreSQL transaction waits for a lock.
const LockTimeout = lockTimeout

// SetDurableWait bounds WaitDurable by w until the returned function runs.
func SetDurableWait(w time.Duration) (restore func()) {
	old := durableWait
	durableWait = w
	return func() { durableWait = old }
}

// CommitMayHaveApplied is commitMayHaveApplied.
var CommitMayHaveApplied = commitMayHaveApplied
