// Package templates stores versioned act templates made of typed fields.
// A template used by an act is immutable; changing it creates a new version.
package templates

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/fieldtype"
)

// Source is where a field's value comes from (the FieldSource enum of the
// spec): an integration, a person, or one of the built-in providers. Acts
// snapshot it into their data points.
type Source string

// Field sources.
const (
	SourceExternalData      Source = "external_data"
	SourceManual            Source = "manual"
	SourceClientCompanyName Source = "client.company_name"
	SourceClientOrgNumber   Source = "client.org_number"
	SourceClientCountry     Source = "client.country"
	SourceClientCreditLimit Source = "client.credit_limit"
	SourceActCreatedAt      Source = "act.created_at"
)

// BuiltinSources are filled by the service itself.
var BuiltinSources = []Source{
	SourceClientCompanyName, SourceClientOrgNumber, SourceClientCountry,
	SourceClientCreditLimit, SourceActCreatedAt,
}

// IsBuiltin reports whether source is a built-in provider.
func IsBuiltin(source Source) bool {
	for _, s := range BuiltinSources {
		if s == source {
			return true
		}
	}
	return false
}

// ValidSource reports whether source is known.
func ValidSource(source Source) bool {
	return source == SourceExternalData || source == SourceManual || IsBuiltin(source)
}

// Template is one version of a template.
type Template struct {
	TenantID          int64 `gorm:"primaryKey;autoIncrement:false"`
	ID                int64 `gorm:"primaryKey;autoIncrement:false"`
	FamilyID          int64 `gorm:"not null"` // id of version 1
	Version           int   `gorm:"not null"`
	PreviousVersionID *int64
	Name              string `gorm:"not null"`
	CreatedAt         time.Time
	UpdatedAt         time.Time

	Fields []Field `gorm:"-"` // loaded explicitly, ordered by position
	// InUse is true once an act references this version (computed by the
	// store's reads; then the version is immutable).
	InUse bool `gorm:"-"`
}

// TableName pins the table.
func (Template) TableName() string { return "templates" }

// Field is a typed field of a template. Options holds the effective options
// as JSON (fieldtype.Options) or nil.
type Field struct {
	TenantID   int64  `gorm:"primaryKey;autoIncrement:false"`
	ID         int64  `gorm:"primaryKey;autoIncrement:false"`
	TemplateID int64  `gorm:"not null"`
	Position   int    `gorm:"not null"`
	Key        string `gorm:"not null"`
	Name       string `gorm:"not null"`
	Type       string `gorm:"not null"`
	Source     Source `gorm:"not null"`
	Options    *string
}

// TableName pins the table.
func (Field) TableName() string { return "template_fields" }

// External reports whether an integration fetches the field.
func (f *Field) External() bool { return f.Source == SourceExternalData }

// FieldType returns the field's type.
func (f *Field) FieldType() fieldtype.Type { return fieldtype.Type(f.Type) }

// ParsedOptions decodes the stored effective options (nil when the type has
// none), ready for fieldtype.Normalize.
func (f *Field) ParsedOptions() (*fieldtype.Options, error) {
	if f.Options == nil {
		return nil, nil
	}
	var o fieldtype.Options
	if err := json.Unmarshal([]byte(*f.Options), &o); err != nil {
		return nil, fmt.Errorf("template field %d: stored options: %w", f.ID, err)
	}
	return &o, nil
}
