package httpapi

import (
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/page"
)

// pageMeta is a list response's `meta`. It lives here, not in internal/page,
// because it is the wire shape: internal/page keeps the rules (bounds, offsets)
// and stays free of the generated models.
func pageMeta(r page.Request, total int64) models.PageMeta {
	return models.PageMeta{CurrentPage: r.Page, PerPage: r.Limit, Total: total}
}
