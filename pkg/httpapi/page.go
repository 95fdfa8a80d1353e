package httpapi

import (
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/page"
)

// pageMeta is a list response's `meta`. It lives here, not in pkg/page,
// because it is the wire shape: pkg/page keeps the rules (bounds, offsets)
// and stays free of the generated models.
func pageMeta(r page.Request, total int64) models.PageMeta {
	return models.PageMeta{CurrentPage: r.Page, PerPage: r.Limit, Total: total}
}
