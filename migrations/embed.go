// Package migrations embeds the versioned goose SQL migrations, one folder per
// dialect. Both folders carry the same version numbers so that a schema
// change is always made for PostgreSQL and SQLite together.
//
// Version ranges are owned by area so that parallel work never collides:
//
//	00001–00009 foundation (tenants, users, id sequences)
//	00010–00019 OAuth
//	00020–00029 resources (clients, templates, acts)
//	00030–00039 fetch flow
//	00040–00049 webhooks and outbox
//	00050+      operations
//
// Rules for every tenant-owned table: tenant_id leads every primary and
// unique key and references tenants(id) ON DELETE CASCADE (ARCHITECTURE.md, Tenancy).
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// FS returns the migrations of dialect ("postgres" or "sqlite") as a flat
// file system of goose SQL files.
func FS(dialect string) (fs.FS, error) {
	switch dialect {
	case "postgres", "sqlite":
		return fs.Sub(files, dialect)
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
}

// All returns the embedded tree (both dialect folders), e.g. for hashing.
func All() fs.FS { return files }
