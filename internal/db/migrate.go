package db

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/finsvc/finsvc/migrations"
)

// Migrate applies every pending embedded migration of d's dialect. On
// PostgreSQL a session advisory lock serializes replicas that start at the
// same time; on SQLite the write lock does.
func (d *DB) Migrate(ctx context.Context) error {
	p, err := d.migrationProvider()
	if err != nil {
		return err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("db: migrate %s: %w", d.Dialect, err)
	}
	for _, r := range results {
		d.logger().InfoContext(ctx, "migration applied",
			"version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// MigrationVersion returns the current schema version and the newest
// embedded one.
func (d *DB) MigrationVersion(ctx context.Context) (current, latest int64, err error) {
	p, err := d.migrationProvider()
	if err != nil {
		return 0, 0, err
	}
	current, latest, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("db: migration version: %w", err)
	}
	return current, latest, nil
}

func (d *DB) migrationProvider() (*goose.Provider, error) {
	fsys, err := migrations.FS(d.Dialect)
	if err != nil {
		return nil, err
	}
	sqlDB, err := d.DB.DB()
	if err != nil {
		return nil, err
	}
	// Migrations are numbered in bands per area (0006x lists at scale,
	// 0007x webhooks, 0008x …), so a migration may land with a number below
	// one a database has already applied (00062 after 00081). goose applies
	// such a one first, then the new ones, instead of refusing to start.
	// Each migration must therefore stand on its own, whatever the order.
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true)}
	dialect := goose.DialectSQLite3
	if d.Dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, fmt.Errorf("db: migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, sqlDB, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("db: load migrations: %w", err)
	}
	return p, nil
}

// Kept are the tables whose records the README promises to keep (the
// append-only audit log), each with the migration that creates it: rolling
// back below that migration drops the table and every record in it.
var Kept = []KeptTable{{Table: "audit_log", Version: 160}}

// KeptTable is a table a roll back must not drop silently.
type KeptTable struct {
	Table   string
	Version int64 // the migration that creates it (the same number on both dialects)
}

// MigrateDownTo rolls migrations back until the schema is at version (0
// removes everything). For operators undoing a bad deploy, and for tests
// proving that every Down section works. A roll back that would drop a
// Kept table while it holds records is refused, changing nothing, unless
// discard names that table: the operator says what will be lost.
func (d *DB) MigrateDownTo(ctx context.Context, version int64, discard ...string) error {
	if err := d.checkKept(ctx, version, discard); err != nil {
		return err
	}
	p, err := d.migrationProvider()
	if err != nil {
		return err
	}
	results, err := p.DownTo(ctx, version)
	if err != nil {
		return fmt.Errorf("db: migrate %s down to %d: %w", d.Dialect, version, err)
	}
	for _, r := range results {
		d.logger().InfoContext(ctx, "migration rolled back",
			"version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// checkKept refuses a roll back to version that would drop a Kept table
// holding records, unless discard names it.
func (d *DB) checkKept(ctx context.Context, version int64, discard []string) error {
	var errs []error
	for _, k := range Kept {
		if version >= k.Version || slices.Contains(discard, k.Table) || !d.DB.Migrator().HasTable(k.Table) {
			continue
		}
		var n int64
		if err := d.DB.WithContext(ctx).Table(k.Table).Count(&n).Error; err != nil {
			return fmt.Errorf("db: count the records of %s: %w", k.Table, err)
		}
		if n > 0 {
			errs = append(errs, fmt.Errorf("rolling back below version %d drops %s and its %d records; pass --discard %s to destroy them", k.Version, k.Table, n, k.Table))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("db: migrate %s down to %d refused, nothing was changed: %w", d.Dialect, version, err)
	}
	return nil
}
