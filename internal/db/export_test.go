package db

import "time"

// PgxQueries is how many Query runs took the pgx path so far.
func PgxQueries() int64 { return pgxQueries.Load() }

// SetDurableWait bounds WaitDurable by w until the returned function runs.
func SetDurableWait(w time.Duration) (restore func()) {
	old := durableWait
	durableWait = w
	return func() { durableWait = old }
}

// CommitMayHaveApplied is commitMayHaveApplied.
var CommitMayHaveApplied = commitMayHaveApplied
