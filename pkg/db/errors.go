package db

import (
	"errors"

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

// ConstraintName returns the violated constraint's name on PostgreSQL (empty
// on SQLite, whose errors name columns instead), for callers that map one of
// several unique keys to a field.
func ConstraintName(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.ConstraintName
	}
	return ""
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
