package db

import (
	"context"
	"fmt"

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

// MigrateDownTo rolls migrations back until the schema is at version (0
// removes everything). For operators undoing a bad deploy, and for tests
// proving that every Down section works.
func (d *DB) MigrateDownTo(ctx context.Context, version int64) error {
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
