package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	sqlite "github.com/glebarez/go-sqlite"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// SQLite extended result codes (https://www.sqlite.org/rescode.html).
const (
	sqliteConstraintForeignKey = 787
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// IsUniqueViolation reports whether err comes from a unique or primary-key
// constraint on either dialect.
func IsUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return true
	}
	if code, ok := pgCode(err); ok {
		return code == "23505"
	}
	if code, ok := sqliteCode(err); ok {
		return code == sqliteConstraintUnique || code == sqliteConstraintPrimaryKey
	}
	return false
}

// IsForeignKeyViolation reports whether err comes from a foreign-key
// constraint (e.g. deleting a row that others still reference).
func IsForeignKeyViolation(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return true
	}
	if code, ok := pgCode(err); ok {
		return code == "23503"
	}
	if code, ok := sqliteCode(err); ok {
		return code == sqliteConstraintForeignKey
	}
	return false
}

func pgCode(err error) (string, bool) {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code, true
	}
	return "", false
}

func sqliteCode(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code(), true
	}
	return 0, false
}

// SQLite primary result codes that mean the database cannot serve now
// rather than that the statement is wrong.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteIOErr    = 10
	sqliteCantOpen = 14
)

// IsUnavailable reports whether err means the database cannot be reached or
// cannot serve right now (connection refused or lost, server shutting down
// or refusing connections, too many connections, the pool closed, the lock
// not obtained within the busy timeout), as opposed to the statement's own
// failure. Callers answer such errors with 503 and Retry-After instead of
// mistaking them for a missing row.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, pgconn.ErrConnClosed):
		return true
	}
	if code, ok := pgCode(err); ok {
		// 08: connection exception; 53: insufficient resources (too many
		// connections, disk full); 57P: shutdown, crash, cannot connect now;
		// 55P03: a lock not obtained within the lock timeout (SQLite's busy).
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "53") || strings.HasPrefix(code, "57P") || code == "55P03"
	}
	if code, ok := sqliteCode(err); ok {
		switch code & 0xff { // the primary code of an extended one
		case sqliteBusy, sqliteLocked, sqliteIOErr, sqliteCantOpen:
			return true
		}
		return false
	}
	// database/sql's error for a closed pool is not exported, and wrappers
	// (fosite's errors) may leave its text out of their own.
	return anyInChain(err, func(e error) bool { return strings.Contains(e.Error(), "sql: database is closed") })
}

// anyInChain reports whether match holds for err or any error it wraps.
func anyInChain(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		if m, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range m.Unwrap() {
				if anyInChain(e, match) {
					return true
				}
			}
			return false
		}
		err = errors.Unwrap(err)
	}
	return false
}
