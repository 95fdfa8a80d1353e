package db

// PgxQueries is how many Query runs took the pgx path so far.
func PgxQueries() int64 { return pgxQueries.Load() }
