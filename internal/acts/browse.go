package acts

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
)

// SearchWindow is how many creation numbers (seq) one search page examines
// at most. A title is matched anywhere in it, which no index serves, so a
// search reads a bounded slice of the newest-first list per page and says
// where it stopped; without a search a page is an index seek and has no
// window.
const SearchWindow = 5000

// MaxQueryLength bounds the search text (the longest title).
const MaxQueryLength = 200

// Browse is a request for one page of the acts list as people page it:
// newest first, from a cursor, never by skipping rows.
type Browse struct {
	// ClientID, Status and TemplateID filter as List's Filter does.
	ClientID   *int64
	Status     *Status
	TemplateID *int64
	// Query matches a title containing it or a client whose name starts
	// with it, ignoring case.
	Query string
	// Before is the cursor: only acts numbered below it (0: the newest).
	Before int64
	// Limit is the page size (1..page.MaxLimit; 0 is page.DefaultLimit).
	Limit int
}

// Listed is an act of a page with the names people know it by.
type Listed struct {
	Act
	ClientName   string
	TemplateName string
}

// BrowsePage is one page of Browse.
type BrowsePage struct {
	Acts []Listed
	// Next is the cursor of the next (older) page; 0 when there is none.
	Next int64
	// SearchedDown is set when a search stopped at its window before the
	// page filled: acts numbered from it up to the cursor were examined,
	// and Next continues below it.
	SearchedDown int64
}

// check reports bad input as field messages.
func (b *Browse) check() error {
	fe := apperr.FieldErrors{}
	if b.Limit == 0 {
		b.Limit = page.DefaultLimit
	}
	if b.Limit < 1 || b.Limit > page.MaxLimit {
		fe.Add("limit", fmt.Sprintf("must be between 1 and %d", page.MaxLimit))
	}
	if b.Before < 0 {
		fe.Add("before", "must be a positive act number")
	}
	if b.Status != nil && *b.Status != StatusDraft && *b.Status != StatusFinal {
		fe.Add("status", "must be draft or final")
	}
	if CheckQuery(b.Query) != nil {
		fe.Add("q", fmt.Sprintf("must be at most %d characters of text", MaxQueryLength))
	}
	return fe.Err(apperr.Invalid, "The filters are invalid.")
}

// CheckQuery reports a search text Browse refuses.
func CheckQuery(q string) error {
	if utf8.RuneCountInString(q) > MaxQueryLength || !utf8.ValidString(q) || strings.ContainsRune(q, 0) {
		return apperr.E(apperr.Invalid, "the search is too long")
	}
	return nil
}

// likeEscape escapes LIKE's wildcards (with \ as the escape character).
var likeEscape = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Browse returns one page of acts, newest first, below the cursor: keyset
// paging over the (tenant, [filter,] seq) indexes (acts_seq_idx,
// acts_status_seq_idx, acts_client_seq_idx, acts_template_seq_idx), so a
// page costs the same at any depth and an act created meanwhile never
// shifts the pages after it. The page's rows are read by their keys (a
// deferred join), then the names of their clients and templates in one
// query each.
func (s *Store) Browse(ctx context.Context, b Browse) (_ *BrowsePage, err error) {
	defer apperr.Wrap(&err, "acts.Browse")
	if err := b.check(); err != nil {
		return nil, err
	}
	keys := tenant.Scope(ctx, s.DB.DB.Model(&Act{}))
	if b.ClientID != nil {
		keys = keys.Where("client_id = ?", *b.ClientID)
	}
	if b.Status != nil {
		keys = keys.Where("status = ?", *b.Status)
	}
	if b.TemplateID != nil {
		keys = keys.Where("template_id = ?", *b.TemplateID)
	}
	if b.Before > 0 {
		keys = keys.Where("seq < ?", b.Before)
	}
	out := &BrowsePage{Acts: []Listed{}}
	floor := int64(0)
	if q := strings.TrimSpace(b.Query); q != "" {
		top := b.Before
		if top == 0 {
			var newest []int64
			if err := tenant.Scope(ctx, s.DB.DB.Model(&Act{})).Order("seq DESC").Limit(1).Pluck("seq", &newest).Error; err != nil {
				return nil, err
			}
			if len(newest) == 0 {
				return out, nil
			}
			top = newest[0] + 1
		}
		floor = max(top-SearchWindow, 0)
		// The client half is one name_key range of the tenant's clients
		// (the prefix rule of clients.Store.List).
		lo := clients.NameKey(q)
		named := tenant.Scope(ctx, s.DB.DB.Model(&clients.Client{})).Select("id").
			Where("name_key >= ? AND name_key < ?", lo, lo+string(utf8.MaxRune))
		keys = keys.Where("seq >= ?", floor).
			Where(s.DB.DB.Where(`lower(title) LIKE ? ESCAPE '\'`, "%"+likeEscape.Replace(strings.ToLower(q))+"%").
				Or("client_id IN (?)", named))
	}
	var seqs []int64
	if err := keys.Order("seq DESC").Limit(b.Limit+1).Pluck("seq", &seqs).Error; err != nil {
		return nil, err
	}
	switch {
	case len(seqs) > b.Limit:
		seqs = seqs[:b.Limit]
		out.Next = seqs[len(seqs)-1]
	case floor > 1:
		// The window ended first: older acts were not examined yet.
		out.Next, out.SearchedDown = floor, floor
	}
	if len(seqs) == 0 {
		return out, nil
	}
	var rows []Act
	if err := tenant.Scope(ctx, s.DB.DB).Where("seq IN ?", seqs).Order("seq DESC").Find(&rows).Error; err != nil {
		return nil, err
	}
	cids, tids := map[int64]bool{}, map[int64]bool{}
	for _, a := range rows {
		cids[a.ClientID], tids[a.TemplateID] = true, true
	}
	var cs []clients.Client
	if err := tenant.Scope(ctx, s.DB.DB).Select("id", "company_name").Where("id IN ?", keysOf(cids)).Find(&cs).Error; err != nil {
		return nil, err
	}
	var ts []templates.Template
	if err := tenant.Scope(ctx, s.DB.DB).Select("id", "name", "version").Where("id IN ?", keysOf(tids)).Find(&ts).Error; err != nil {
		return nil, err
	}
	cname, tname := map[int64]string{}, map[int64]string{}
	for _, c := range cs {
		cname[c.ID] = c.CompanyName
	}
	for _, t := range ts {
		tname[t.ID] = t.Name
	}
	for _, a := range rows {
		out.Acts = append(out.Acts, Listed{Act: a, ClientName: cname[a.ClientID], TemplateName: tname[a.TemplateID]})
	}
	return out, nil
}

func keysOf(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
