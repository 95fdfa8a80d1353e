package acts

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
)

// An act's latest fetch states start from its own data points, however
// many fetch fields the tenant has: on SQLite, which plans without
// statistics, the statement must search the act's data_points first
// (data_points_act_idx, or their ids) and reach the fetch fields by primary key, not
// walk the tenant's fetch fields (fetch_request_fields_dp_idx). PostgreSQL
// plans by its statistics; its test is that the statement runs.
func TestLatestFetchStartsFromTheAct(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "plan")
		for _, ids := range [][]int64{nil, {1, 2}} {
			sql := d.DB.ToSQL(func(tx *gorm.DB) *gorm.DB {
				var out []map[string]any
				return latestFetchQuery(ctx, tx, uuid.New(), ids).Find(&out)
			})
			if d.Dialect != db.SQLite {
				if _, err := latestFetch(ctx, d.DB, uuid.New(), ids, d.DB.NowFunc()); err != nil {
					t.Fatal(err)
				}
				continue
			}
			var plan []struct {
				ID      int
				Parent  int
				Notused int
				Detail  string
			}
			if err := d.Raw("EXPLAIN QUERY PLAN " + sql).Scan(&plan).Error; err != nil {
				t.Fatal(err)
			}
			var steps []string
			for _, p := range plan {
				steps = append(steps, p.Detail)
			}
			if len(steps) < 2 || !strings.HasPrefix(steps[0], "SEARCH data_points USING") ||
				!strings.Contains(steps[1], "SEARCH f USING") || strings.Contains(strings.Join(steps, "\n"), "fetch_request_fields_dp_idx") {
				t.Errorf("ids %v: plan\n%s\nwant a search of data_points first, then f by its key", ids, strings.Join(steps, "\n"))
			}
		}
	})
}
