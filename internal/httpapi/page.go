package httpapi

import (
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/page"
)

// pageMeta is a list response's `meta`. It lives here, not in internal/page,
// because it is the wire shape: internal/page keeps the rules (bounds, offsets)
// and stays free of the generated models.
func pageMeta(r page.Request, total int64) models.PageMeta {
	return models.PageMeta{CurrentPage: r.Page, PerPage: r.Limit, Total: total}
}

// syncTimeLayout writes a sync position with every digit the stores keep
// (db.Clock's microseconds), always six, so that the text a client sends
// back names the same instant and never needs parsing.
const syncTimeLayout = "2006-01-02T15:04:05.000000Z"

// nextSince is the position a sync resumes from after a page: the last
// row's time, or, on an empty page, the position the request gave (nil
// when it gave none). Stores compare at microseconds, so truncating the
// given one changes nothing they return.
func nextSince(since, last *time.Time) *string {
	var t time.Time
	switch {
	case last != nil:
		t = *last
	case since != nil:
		t = *since
	default:
		return nil
	}
	s := t.UTC().Truncate(time.Microsecond).Format(syncTimeLayout)
	return &s
}
