// Package page holds the list pagination rules (ARCHITECTURE.md, Data and storage), shared by
// every list endpoint: `page` from 1 (default 1), `limit` 1..100 (default
// 25), and the `meta {current_page, per_page, total}` of the response.
//
// A list is two queries: one COUNT and, unless the page starts past the last
// row, one page query (ORDER BY id LIMIT … OFFSET …). Stores ask Beyond to
// skip the second.
package page

import (
	"fmt"

	"github.com/finsvc/finsvc/internal/apperr"
)

// Bounds. MaxPage matches the OpenAPI Page parameter: it keeps OFFSET within
// a range the databases answer without overflow.
const (
	DefaultLimit = 25
	MaxLimit     = 100
	MaxPage      = 1_000_000
)

// Request is a validated page request.
type Request struct {
	Page  int // from 1
	Limit int // 1..MaxLimit
}

// New applies the defaults to the optional query parameters and validates
// them. The request validator already enforces the spec's bounds; checking
// again here keeps stores safe when called from elsewhere (CLI, demo).
func New(pageNo, limit *int) (Request, error) {
	r := Request{Page: 1, Limit: DefaultLimit}
	if pageNo != nil {
		r.Page = *pageNo
	}
	if limit != nil {
		r.Limit = *limit
	}
	return r, r.Validate()
}

// Validate reports out-of-range values as apperr.Invalid with field messages.
func (r Request) Validate() error {
	fe := apperr.FieldErrors{}
	if r.Page < 1 || r.Page > MaxPage {
		fe.Add("page", fmt.Sprintf("must be between 1 and %d", MaxPage))
	}
	if r.Limit < 1 || r.Limit > MaxLimit {
		fe.Add("limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
	}
	return fe.Err(apperr.Invalid, "The request is invalid.")
}

// Offset is the number of rows before the page.
func (r Request) Offset() int { return (r.Page - 1) * r.Limit }

// Beyond reports whether the page starts at or after the last of total rows,
// i.e. it is empty without asking the database.
func (r Request) Beyond(total int64) bool { return int64(r.Offset()) >= total }
