package openapi

// The extensions that declare the operation policy (the spec's
// info.description, "Roles per operation", says what they mean);
// internal/authspec reads them.
const (
	ExtAction    = "x-finsvc-action"
	ExtForbidden = "x-finsvc-forbidden"
	ExtPages     = "x-finsvc-pages"
)
