package counted

import (
	"fmt"
	"strings"
)

// SQLite is the SQLite migration installing the triggers of lists; tail
// is the hand-kept end of its Down.
//
// SQLite has row triggers only: one per table and operation, with one
// upsert into list_counts and one into list_blocks (one statement per
// bucket cost an UPDATE of acts half as much again as the triggers this
// replaced, which fire three). Its DELETE without WHERE runs the delete
// triggers (no TRUNCATE). The update trigger runs only for an UPDATE that
// names a column the counters read and changes one, and writes only the
// buckets the row left or entered (updates that move nothing write
// nothing).
func SQLite(lists []List, tail string) string {
	var s strings.Builder
	s.WriteString(header)
	s.WriteString("\n-- +goose Up\n")
	s.WriteString("-- What the Down restores (what was there before), and this generation's.\n")
	triggers, _ := replaced(tail)
	for _, t := range triggers {
		fmt.Fprintf(&s, "DROP TRIGGER IF EXISTS %s;\n", t.name)
	}
	sqliteDrops(&s, lists)
	for _, l := range lists {
		for _, t := range l.Tables {
			fmt.Fprintf(&s, "\n-- +goose StatementBegin\nCREATE TRIGGER %s_counters_ins AFTER INSERT ON %s BEGIN\n", t, t)
			sqliteUpserts(&s, l, "NEW", 1)
			s.WriteString("END;\n-- +goose StatementEnd\n")
			fmt.Fprintf(&s, "-- +goose StatementBegin\nCREATE TRIGGER %s_counters_del AFTER DELETE ON %s BEGIN\n", t, t)
			sqliteUpserts(&s, l, "OLD", -1)
			s.WriteString("END;\n-- +goose StatementEnd\n")
			if !l.Updates {
				continue
			}
			cols := l.columns()
			fmt.Fprintf(&s, "-- +goose StatementBegin\nCREATE TRIGGER %s_counters_upd AFTER UPDATE OF %s ON %s\n    WHEN %s BEGIN\n",
				t, strings.Join(cols, ", "), t, changed(cols))
			sqliteMoves(&s, l)
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
// block of l: one upsert per counter table, its rows in one VALUES list.
func sqliteUpserts(s *strings.Builder, l List, row string, sign int) {
	var rows []string
	for _, b := range l.Buckets {
		rows = append(rows, fmt.Sprintf("(%s.tenant_id, '%s', %s, %d)", row, l.Kind, b.expr("", row+"."), sign))
	}
	fmt.Fprintf(s, "    INSERT INTO list_counts (tenant_id, kind, bucket, n) VALUES\n        %s\n", strings.Join(rows, ",\n        "))
	s.WriteString("        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + excluded.n;\n")
	if len(l.Blocks) == 0 {
		return
	}
	rows = rows[:0]
	for _, b := range l.Blocks {
		rows = append(rows, fmt.Sprintf("(%s.tenant_id, %s, %s.%s >> 10, %d)", row, b.expr(l.Kind+":", row+"."), row, l.BlockBy, sign))
	}
	fmt.Fprintf(s, "    INSERT INTO list_blocks (tenant_id, kind, block, n) VALUES\n        %s\n", strings.Join(rows, ",\n        "))
	s.WriteString("        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + excluded.n;\n")
}

// sqliteMoves moves the row's counts from its OLD buckets and blocks to
// its NEW ones, writing only those that change (HAVING sum(d) <> 0), as
// the PostgreSQL update trigger does: one upsert per counter table.
func sqliteMoves(s *strings.Builder, l List) {
	var terms []string
	for _, src := range []source{{"OLD", -1}, {"NEW", 1}} {
		for _, b := range l.Buckets {
			terms = append(terms, fmt.Sprintf("SELECT %s.tenant_id%s, %s%s, %d%s", src.table, as(len(terms), " AS t"),
				b.expr("", src.table+"."), as(len(terms), " AS b"), src.sign, as(len(terms), " AS d")))
		}
	}
	fmt.Fprintf(s, `    INSERT INTO list_counts (tenant_id, kind, bucket, n)
    SELECT t, '%s', b, sum(d) FROM (
        %s
    ) WHERE true GROUP BY t, b HAVING sum(d) <> 0
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = n + excluded.n;
`, l.Kind, strings.Join(terms, "\n        UNION ALL "))
	if len(l.Blocks) == 0 {
		return
	}
	terms = terms[:0]
	for _, src := range []source{{"OLD", -1}, {"NEW", 1}} {
		for _, b := range l.Blocks {
			terms = append(terms, fmt.Sprintf("SELECT %s.tenant_id%s, %s%s, %s.%s >> 10%s, %d%s", src.table, as(len(terms), " AS t"),
				b.expr(l.Kind+":", src.table+"."), as(len(terms), " AS k"), src.table, l.BlockBy, as(len(terms), " AS blk"), src.sign, as(len(terms), " AS d")))
		}
	}
	fmt.Fprintf(s, `    INSERT INTO list_blocks (tenant_id, kind, block, n)
    SELECT t, k, blk, sum(d) FROM (
        %s
    ) WHERE true GROUP BY t, k, blk HAVING sum(d) <> 0
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = n + excluded.n;
`, strings.Join(terms, "\n        UNION ALL "))
}
