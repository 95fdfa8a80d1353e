package counted

import (
	"fmt"
	"strings"
)

// SQLite is the SQLite migration installing the triggers of lists; tail
// is the hand-kept end of its Down.
//
// SQLite has row triggers only: one per table and operation, one upsert
// per bucket and block series. Its DELETE without WHERE runs the delete
// triggers (no TRUNCATE). The update trigger runs only for an UPDATE that
// names a column the counters read and changes one, and each of its
// upserts only when the row left its bucket (updates that move nothing
// write nothing).
func SQLite(lists []List, tail string) string {
	var s strings.Builder
	s.WriteString(header)
	s.WriteString("\n-- +goose Up\n")
	s.WriteString("-- The hand-written triggers of migrations 00060-00101, and those of an\n-- earlier generation.\n")
	for _, t := range before270SQLite {
		fmt.Fprintf(&s, "DROP TRIGGER IF EXISTS %s;\n", t)
	}
	sqliteDrops(&s, lists)
	for _, l := range lists {
		for _, t := range l.Tables {
			fmt.Fprintf(&s, "\n-- +goose StatementBegin\nCREATE TRIGGER %s_counters_ins AFTER INSERT ON %s BEGIN\n", t, t)
			sqliteUpserts(&s, l, "NEW", 1, nil)
			s.WriteString("END;\n-- +goose StatementEnd\n")
			fmt.Fprintf(&s, "-- +goose StatementBegin\nCREATE TRIGGER %s_counters_del AFTER DELETE ON %s BEGIN\n", t, t)
			sqliteUpserts(&s, l, "OLD", -1, nil)
			s.WriteString("END;\n-- +goose StatementEnd\n")
			if !l.Updates {
				continue
			}
			cols := l.columns()
			fmt.Fprintf(&s, "-- +goose StatementBegin\nCREATE TRIGGER %s_counters_upd AFTER UPDATE OF %s ON %s\n    WHEN %s BEGIN\n",
				t, strings.Join(cols, ", "), t, changed(cols))
			sqliteUpserts(&s, l, "OLD", -1, cols)
			sqliteUpserts(&s, l, "NEW", 1, cols)
			s.WriteString("END;\n-- +goose StatementEnd\n")
		}
	}
	s.WriteString(recount(lists))
	s.WriteString("\n-- +goose Down\n")
	sqliteDrops(&s, lists)
	s.WriteString(tail)
	return s.String()
}

func sqliteDrops(s *strings.Builder, lists []List) {
	for _, l := range lists {
		for _, t := range l.Tables {
			for _, op := range []string{"ins", "del", "upd"} {
				fmt.Fprintf(s, "DROP TRIGGER IF EXISTS %s_counters_%s;\n", t, op)
			}
		}
	}
}

// changed is the condition that one of cols changed.
func changed(cols []string) string {
	var c []string
	for _, col := range cols {
		c = append(c, "OLD."+col+" IS NOT NEW."+col)
	}
	return strings.Join(c, " OR ")
}

// sqliteUpserts adds sign for the row (NEW or OLD) to each bucket and
// block; in an update trigger (moved set), only to those whose columns
// (tenant_id and the bucket's, and the block's) changed.
func sqliteUpserts(s *strings.Builder, l List, row string, sign int, moved []string) {
	upsert := func(table, conflict, values string, cols []string) {
		if moved == nil {
			fmt.Fprintf(s, "    INSERT INTO %s VALUES (%s)\n", table, values)
		} else {
			fmt.Fprintf(s, "    INSERT INTO %s SELECT %s\n        WHERE %s\n", table, values, changed(cols))
		}
		fmt.Fprintf(s, "        ON CONFLICT (%s) DO UPDATE SET n = n + (%d);\n", conflict, sign)
	}
	for _, b := range l.Buckets {
		upsert("list_counts (tenant_id, kind, bucket, n)", "tenant_id, kind, bucket",
			fmt.Sprintf("%s.tenant_id, '%s', %s, %d", row, l.Kind, b.expr("", row+"."), sign),
			append([]string{"tenant_id"}, b.columns()...))
	}
	for _, b := range l.Blocks {
		upsert("list_blocks (tenant_id, kind, block, n)", "tenant_id, kind, block",
			fmt.Sprintf("%s.tenant_id, %s, %s.%s >> 10, %d", row, b.expr(l.Kind+":", row+"."), row, l.BlockBy, sign),
			append([]string{"tenant_id", l.BlockBy}, b.columns()...))
	}
}

// before270SQLite are the counting triggers of migrations 00060-00101,
// which 00270 replaces.
var before270SQLite = []string{
	"clients_count_ins", "clients_count_del", "templates_count_ins", "templates_count_del",
	"users_count_ins", "users_count_del", "acts_count_ins", "acts_count_del", "acts_count_upd",
	"webhooks_count_ins", "webhooks_count_del", "deliveries_count_ins", "deliveries_count_del",
	"acts_block_ins", "acts_block_del", "acts_block_upd",
	"delivery_history_count_ins", "delivery_history_count_del",
	"clients_filter_ins", "clients_filter_del", "clients_filter_upd",
	"acts_template_ins", "acts_template_del", "acts_template_upd",
	"clients_country_blocks_ins", "clients_country_blocks_del", "clients_country_blocks_upd",
	"acts_template_block_ins", "acts_template_block_del", "acts_template_block_upd",
}
