package db_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

type probe struct {
	ID   int64
	Name string
	Note sql.NullString
}

func probeCols(p *probe) []any { return []any{&p.ID, &p.Name, &p.Note} }

// probeTable makes a table of n rows (every third without a note).
func probeTable(t *testing.T, d *db.DB, n int) {
	t.Helper()
	if err := d.Exec("CREATE TABLE scan_probe (id bigint PRIMARY KEY, name text NOT NULL, note text)").Error; err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		var note any = fmt.Sprintf("note %d", i)
		if i%3 == 0 {
			note = nil
		}
		if err := d.Exec("INSERT INTO scan_probe (id, name, note) VALUES (?, ?, ?)", i, fmt.Sprintf("row %d", i), note).Error; err != nil {
			t.Fatal(err)
		}
	}
}

var (
	probeOne  = db.NewQuery("SELECT id, name, note FROM scan_probe WHERE id = ?")
	probeFrom = db.NewQuery("SELECT id, name, note FROM scan_probe WHERE id > ? ORDER BY id")
	probeBad  = db.NewQuery("SELECT id, name, no_such_column FROM scan_probe WHERE id = ?")
)

// wantProbe is row i as probeTable wrote it.
func wantProbe(i int64) probe {
	p := probe{ID: i, Name: fmt.Sprintf("row %d", i)}
	if i%3 != 0 {
		p.Note = sql.NullString{String: fmt.Sprintf("note %d", i), Valid: true}
	}
	return p
}

// A Query gives the same rows whichever path it takes: pgx itself on
// PostgreSQL outside a transaction, GORM's Raw otherwise; the test checks
// which path each read took.
func TestQueryPaths(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		probeTable(t, d, 30)
		ctx := t.Context()
		pg := d.Dialect == db.Postgres
		took := func(t *testing.T, wantPgx bool, read func() error) {
			t.Helper()
			before := db.PgxQueries()
			if err := read(); err != nil {
				t.Fatal(err)
			}
			if got := db.PgxQueries() - before; (got == 1) != wantPgx || got > 1 {
				t.Errorf("pgx path taken %d times, want it taken: %v", got, wantPgx)
			}
		}

		t.Run("one", func(t *testing.T) {
			var p probe
			took(t, pg, func() error {
				return probeOne.One(ctx, d.DB, []any{6}, probeCols(&p)...)
			})
			if p != wantProbe(6) {
				t.Errorf("One = %+v, want %+v", p, wantProbe(6))
			}
		})
		t.Run("none", func(t *testing.T) {
			var p probe
			err := probeOne.One(ctx, d.DB, []any{999}, probeCols(&p)...)
			if !errors.Is(err, db.ErrNoRows) {
				t.Errorf("One of no row = %v, want ErrNoRows", err)
			}
		})
		t.Run("all", func(t *testing.T) {
			var got []probe
			took(t, pg, func() (err error) {
				got, err = db.QueryAll(ctx, d.DB, probeFrom, []any{10}, 4, probeCols)
				return err
			})
			if len(got) != 20 {
				t.Fatalf("QueryAll = %d rows, want 20", len(got))
			}
			for i, p := range got {
				if want := wantProbe(int64(11 + i)); p != want {
					t.Errorf("row %d = %+v, want %+v", i, p, want)
				}
			}
		})
		t.Run("in a transaction", func(t *testing.T) {
			// A transaction's reads must see its own writes, so they stay on
			// its connection: GORM's path.
			var p probe
			rollBack := errors.New("roll back")
			took(t, false, func() error {
				err := d.Tx(ctx, func(tx *gorm.DB) error {
					if err := tx.Exec("UPDATE scan_probe SET name = 'changed' WHERE id = 7").Error; err != nil {
						return err
					}
					if err := probeOne.One(ctx, tx, []any{7}, probeCols(&p)...); err != nil {
						return err
					}
					return rollBack
				})
				if errors.Is(err, rollBack) {
					return nil
				}
				return err
			})
			if p.Name != "changed" {
				t.Errorf("read in the transaction = %+v, want its own write", p)
			}
		})
		t.Run("bad statement", func(t *testing.T) {
			var p probe
			err := probeBad.One(ctx, d.DB, []any{1}, probeCols(&p)...)
			if err == nil {
				t.Error("One of a missing column succeeded")
			}
			// The pool is still usable afterwards.
			if err := probeOne.One(ctx, d.DB, []any{1}, probeCols(&p)...); err != nil || p != wantProbe(1) {
				t.Errorf("One after an error = %+v, %v", p, err)
			}
		})
		t.Run("scan error", func(t *testing.T) {
			var id int64
			var name int64 // a text column into an integer
			err := probeOne.One(ctx, d.DB, []any{1}, &id, &name, new(sql.NullString))
			if err == nil {
				t.Error("scanning text into an integer succeeded")
			}
		})
		t.Run("canceled", func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			var p probe
			if err := probeOne.One(cctx, d.DB, []any{1}, probeCols(&p)...); err == nil {
				t.Error("One with a canceled context succeeded")
			}
		})
		t.Run("counted", func(t *testing.T) {
			counted, count := d.CountQueries()
			var p probe
			took(t, pg, func() error {
				return probeOne.One(ctx, counted.DB, []any{2}, probeCols(&p)...)
			})
			if n := count(); n != 1 {
				t.Errorf("CountQueries saw %d queries, want 1", n)
			}
		})
		t.Run("traced", func(t *testing.T) {
			// A recording span wants the GORM plugin's span of the real
			// query: GORM's path.
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
			defer tp.Shutdown(context.Background())
			sctx, span := tp.Tracer("test").Start(ctx, "request")
			defer span.End()
			var p probe
			took(t, false, func() error {
				return probeOne.One(sctx, d.DB, []any{4}, probeCols(&p)...)
			})
			if p != wantProbe(4) {
				t.Errorf("traced One = %+v", p)
			}
		})
		t.Run("concurrent", func(t *testing.T) {
			// More readers than pooled connections, each checking its rows:
			// a connection lent to pgx must come back clean to the pool.
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 10 {
						id := int64((g*10+i)%30 + 1)
						var p probe
						if err := probeOne.One(ctx, d.DB, []any{id}, probeCols(&p)...); err != nil {
							errs <- err
							return
						}
						if p != wantProbe(id) {
							errs <- fmt.Errorf("row %d read as %+v", id, p)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	})
}
