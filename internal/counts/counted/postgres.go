package counted

import (
	"fmt"
	"regexp"
	"strings"
)

// Postgres is the PostgreSQL migration installing the triggers of lists;
// tail is the hand-kept end of its Down (Split of the file as it is).
//
// Each list has one trigger function, run once per statement with its
// transition tables: a COPY of a million rows costs one aggregate upsert
// into list_counts and one into list_blocks, not a million. Each upsert
// takes its counter rows in key order (tenant, bucket or kind and block),
// so concurrent writers queue rather than deadlock. An UPDATE writes only
// the buckets and blocks that rows left or entered (HAVING sum(d) <> 0).
// TRUNCATE recounts the list from the rows that remain (none, unless the
// list has another table).
func Postgres(lists []List, tail string) string {
	var s strings.Builder
	s.WriteString(header)
	s.WriteString("\n-- +goose Up\n")
	s.WriteString("-- What the Down restores (what was there before), and this generation's.\n")
	triggers, functions := replaced(tail)
	for _, t := range triggers {
		fmt.Fprintf(&s, "DROP TRIGGER IF EXISTS %s ON %s;\n", t.name, t.table)
	}
	pgDrops(&s, lists)
	for _, f := range functions {
		fmt.Fprintf(&s, "DROP FUNCTION IF EXISTS %s();\n", f)
	}
	for _, l := range lists {
		s.WriteString("\n-- +goose StatementBegin\n")
		fmt.Fprintf(&s, "CREATE FUNCTION finsvc_counters_%s() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n", l.Kind)
		s.WriteString("    IF TG_OP = 'INSERT' THEN\n")
		pgUpserts(&s, l, []source{{"new_rows", 1}}, false)
		s.WriteString("    ELSIF TG_OP = 'DELETE' THEN\n")
		pgUpserts(&s, l, []source{{"old_rows", -1}}, false)
		if l.Updates {
			s.WriteString("    ELSE\n")
			pgUpserts(&s, l, []source{{"old_rows", -1}, {"new_rows", 1}}, true)
		}
		s.WriteString("    END IF;\n    RETURN NULL;\nEND;\n$$;\n-- +goose StatementEnd\n")

		s.WriteString("-- +goose StatementBegin\n")
		fmt.Fprintf(&s, "CREATE FUNCTION finsvc_counters_%s_truncate() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n", l.Kind)
		fmt.Fprintf(&s, "    DELETE FROM list_counts WHERE kind = '%s';\n", l.Kind)
		fmt.Fprintf(&s, "    INSERT INTO list_counts (tenant_id, kind, bucket, n)\n    %s;\n", indent(TruthCounts([]List{l}), "    "))
		if len(l.Blocks) > 0 {
			fmt.Fprintf(&s, "    DELETE FROM list_blocks WHERE kind = '%s' OR kind LIKE '%s:%%';\n", l.Kind, l.Kind)
			fmt.Fprintf(&s, "    INSERT INTO list_blocks (tenant_id, kind, block, n)\n    %s;\n", indent(TruthBlocks([]List{l}), "    "))
		}
		s.WriteString("    RETURN NULL;\nEND;\n$$;\n-- +goose StatementEnd\n")

		for _, t := range l.Tables {
			fmt.Fprintf(&s, "CREATE TRIGGER %s_counters_ins AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows\n    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_counters_%s();\n", t, t, l.Kind)
			fmt.Fprintf(&s, "CREATE TRIGGER %s_counters_del AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows\n    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_counters_%s();\n", t, t, l.Kind)
			if l.Updates {
				fmt.Fprintf(&s, "CREATE TRIGGER %s_counters_upd AFTER UPDATE ON %s REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows\n    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_counters_%s();\n", t, t, l.Kind)
			}
			fmt.Fprintf(&s, "CREATE TRIGGER %s_counters_trunc AFTER TRUNCATE ON %s\n    FOR EACH STATEMENT EXECUTE FUNCTION finsvc_counters_%s_truncate();\n", t, t, l.Kind)
		}
	}
	s.WriteString(recount(lists))
	s.WriteString("\n-- +goose Down\n")
	pgDrops(&s, lists)
	s.WriteString(tail)
	return s.String()
}

// pgDrops drops what Postgres creates.
func pgDrops(s *strings.Builder, lists []List) {
	for _, l := range lists {
		for _, t := range l.Tables {
			for _, op := range []string{"ins", "del", "upd", "trunc"} {
				fmt.Fprintf(s, "DROP TRIGGER IF EXISTS %s_counters_%s ON %s;\n", t, op, t)
			}
		}
		fmt.Fprintf(s, "DROP FUNCTION IF EXISTS finsvc_counters_%s();\n", l.Kind)
		fmt.Fprintf(s, "DROP FUNCTION IF EXISTS finsvc_counters_%s_truncate();\n", l.Kind)
	}
}

// source is a transition table and the sign of its rows.
type source struct {
	table string
	sign  int
}

// pgUpserts adds the rows of sources to the list's counts and blocks.
func pgUpserts(s *strings.Builder, l List, sources []source, moves bool) {
	having := ""
	if moves {
		having = " HAVING sum(d) <> 0"
	}
	var terms []string
	for _, src := range sources {
		for _, b := range l.Buckets {
			terms = append(terms, fmt.Sprintf("SELECT tenant_id, %s%s, %d%s FROM %s", b.expr("", ""), as(len(terms), " AS b"), src.sign, as(len(terms), " AS d"), src.table))
		}
	}
	fmt.Fprintf(s, `        INSERT INTO list_counts (tenant_id, kind, bucket, n)
        SELECT tenant_id, '%s', b, sum(d) FROM (
            %s
        ) x GROUP BY tenant_id, b%s ORDER BY tenant_id, b
        ON CONFLICT (tenant_id, kind, bucket) DO UPDATE SET n = list_counts.n + EXCLUDED.n;
`, l.Kind, strings.Join(terms, "\n            UNION ALL "), having)
	if len(l.Blocks) == 0 {
		return
	}
	terms = terms[:0]
	for _, src := range sources {
		for _, b := range l.Blocks {
			terms = append(terms, fmt.Sprintf("SELECT tenant_id, %s%s, %s >> 10%s, %d%s FROM %s",
				b.expr(l.Kind+":", ""), as(len(terms), " AS k"), l.BlockBy, as(len(terms), " AS blk"), src.sign, as(len(terms), " AS d"), src.table))
		}
	}
	fmt.Fprintf(s, `        INSERT INTO list_blocks (tenant_id, kind, block, n)
        SELECT tenant_id, k, blk, sum(d) FROM (
            %s
        ) x GROUP BY tenant_id, k, blk%s ORDER BY tenant_id, k, blk
        ON CONFLICT (tenant_id, kind, block) DO UPDATE SET n = list_blocks.n + EXCLUDED.n;
`, strings.Join(terms, "\n            UNION ALL "), having)
}

// recount replaces every counter with what the rows say, so that a bucket
// new in this generation starts complete. Creating the triggers locked the
// counted tables against writes until the migration commits.
func recount(lists []List) string {
	return fmt.Sprintf(`
-- Every counter, recounted from the rows.
DELETE FROM list_counts;
DELETE FROM list_blocks;
INSERT INTO list_counts (tenant_id, kind, bucket, n)
%s;
INSERT INTO list_blocks (tenant_id, kind, block, n)
%s;
`, TruthCounts(lists), TruthBlocks(lists))
}

func indent(s, by string) string { return strings.ReplaceAll(s, "\n", "\n"+by) }

const header = `-- Generated by internal/counts/cmd/gencounts from internal/counts/counted
-- (the declaration of what the list counters count); DO NOT EDIT above
-- the hand-kept end of the Down. Replaces every counting trigger and
-- recounts list_counts and list_blocks from the rows.
`

type trigger struct{ name, table string }

var (
	createTrigger  = regexp.MustCompile(`(?m)^CREATE TRIGGER (\w+)\b[^;]*?\bON (\w+)`)
	createFunction = regexp.MustCompile(`(?m)^CREATE (?:OR REPLACE )?FUNCTION (\w+)\(`)
)

// replaced are the triggers and functions the hand-kept tail of the Down
// creates: what was there before the migration, which its Up drops.
func replaced(tail string) (triggers []trigger, functions []string) {
	for _, m := range createTrigger.FindAllStringSubmatch(tail, -1) {
		triggers = append(triggers, trigger{m[1], m[2]})
	}
	for _, m := range createFunction.FindAllStringSubmatch(tail, -1) {
		functions = append(functions, m[1])
	}
	return triggers, functions
}
