package acts

import (
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/templates"
)

// BuiltinValue computes the value of a built-in provider field (client.*,
// act.created_at) for data point d of act a about client c, normalized for
// d's type and options. A provider value the field's type cannot hold (a
// credit limit with cents in an integer field, a company name in a date
// field) is an error rather than a guess: the caller leaves the value as it
// is and reports the fetch of that field as failed.
func BuiltinValue(d *DataPoint, c *clients.Client, a *Act) (string, error) {
	var raw string
	switch d.Source {
	case templates.SourceClientCompanyName:
		raw = c.CompanyName
	case templates.SourceClientOrgNumber:
		raw = c.OrgNumber
	case templates.SourceClientCountry:
		raw = c.Country
	case templates.SourceClientCreditLimit:
		raw = c.CreditLimit.String()
	case templates.SourceActCreatedAt:
		// A date field gets the calendar day (UTC); any other type the
		// full RFC 3339 instant.
		if d.Type == fieldtype.Date {
			raw = a.CreatedAt.UTC().Format(time.DateOnly)
		} else {
			raw = a.CreatedAt.UTC().Format(time.RFC3339)
		}
	default:
		return "", fmt.Errorf("source %q is not a built-in provider", d.Source)
	}
	opts, err := d.FieldOptions()
	if err != nil {
		return "", err
	}
	v, err := fieldtype.Normalize(d.Type, opts, raw)
	if err != nil {
		return "", fmt.Errorf("the %s value is not valid for this %s field: %w", d.Source, d.Type, err)
	}
	return v, nil
}
