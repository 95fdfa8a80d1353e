// Package counted is the one statement of what the list counters count:
// which tables feed which list, the buckets (filters) each list keeps a
// total of, and the blocks it keeps for deep pages. Everything else is
// generated from Lists by `go generate ./internal/counts`
// (internal/counts/cmd/gencounts):
//
//   - the statements that compute the counters from the rows
//     (internal/counts/counts.gen.go: truthCounts, truthBlocks, counted),
//     which counts.Check and counts.Rebuild run;
//   - the triggers that keep them on every write, in a goose migration per
//     dialect (Migration): statement-level triggers with transition tables
//     on PostgreSQL, row triggers on SQLite.
//
// To count a new list or bucket: add it to Lists, set Migration to a new
// version (a migration that shipped never changes: databases that ran it
// would not see the change), run go generate ./internal/counts, put the
// previous generation's Up at the end of the new migration's Down (below
// DownMarker: it restores what was there), and add its Key constructor in
// internal/counts. The migration replaces every counting trigger and
// recounts from the rows, so the new bucket starts complete.
// internal/counts tests that the generated files are fresh and that the
// triggers keep exactly what the statements compute.
package counted

// Migration is the goose migration (both dialects) that installs the
// triggers generated from Lists.
const Migration = "00270_list_counters"

// Lists are the counted lists, in the order the statements name them.
var Lists = []List{
	{
		Kind:   "clients",
		Tables: []string{"clients"},
		Buckets: []Bucket{
			nil,
			{{"country", "country"}},
			{{"org", "org_number"}},
		},
		BlockBy: "id",
		Blocks:  []Bucket{nil, {{"country", "country"}}},
		Updates: true,
	},
	{
		Kind:    "templates",
		Tables:  []string{"templates"},
		Buckets: []Bucket{nil},
		BlockBy: "id",
		Blocks:  []Bucket{nil},
	},
	{
		Kind:    "users",
		Tables:  []string{"users"},
		Buckets: []Bucket{nil},
		BlockBy: "id",
		Blocks:  []Bucket{nil},
	},
	{
		// Acts are listed newest first: their blocks number seq, the
		// creation order within the tenant.
		Kind:   "acts",
		Tables: []string{"acts"},
		Buckets: []Bucket{
			nil,
			{{"s", "status"}},
			{{"c", "client_id"}},
			{{"c", "client_id"}, {"s", "status"}},
			{{"t", "template_id"}},
			{{"t", "template_id"}, {"s", "status"}},
		},
		BlockBy: "seq",
		Blocks:  []Bucket{nil, {{"s", "status"}}, {{"t", "template_id"}}},
		Updates: true,
	},
	{
		Kind:   "webhooks",
		Tables: []string{"webhooks"},
		// What a member may see: the registrations they created.
		Buckets: []Bucket{nil, {{"u", "created_by_user_id"}}},
	},
	{
		// A registration's delivery log: the pending rows and the finished
		// ones, moved from one table to the other (an insert there, a
		// delete here).
		Kind:    "deliveries",
		Tables:  []string{"deliveries", "delivery_history"},
		Buckets: []Bucket{{{"w", "webhook_id"}}},
	},
}

// List is one counted list: list_counts rows of kind Kind, one per tenant
// and bucket, and (BlockBy set) list_blocks rows per block of 1,024 keys.
type List struct {
	// Kind is list_counts.kind (and the prefix of its list_blocks kinds).
	Kind string
	// Tables hold the list's rows; more than one: their union.
	Tables []string
	// Buckets are the totals kept: nil is the whole list (bucket ''),
	// others one total per value of their columns.
	Buckets []Bucket
	// BlockBy is the column whose blocks (column >> 10) are counted for
	// deep pages ("id": lists in id order, "seq": acts, newest first); ""
	// keeps none.
	BlockBy string
	// Blocks are the block series kept: nil is the whole list's (kind
	// Kind), others one series per value (kind "<Kind>:<bucket>").
	Blocks []Bucket
	// Updates: an UPDATE may move a row between buckets or blocks, so an
	// update trigger moves its counts (updates that move nothing write
	// nothing). Lists whose bucket columns the service never changes leave
	// it out and spare every update of their table the trigger.
	Updates bool
}

// Bucket is a filter's key: 'label:' || column [|| ':label:' || column…].
type Bucket []Part

// Part is one column of a bucket and the label before its value.
type Part struct {
	Label  string
	Column string
}
