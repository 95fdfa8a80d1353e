package templates

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/fieldtype"
)

// Limits of a template (the TemplateInput schema of the OpenAPI document).
const (
	MaxNameLength = 200
	MaxFields     = 500
)

// Input is a template to create, or the new content of one.
type Input struct {
	Name   string
	Fields []FieldInput
}

// FieldInput is one field of an Input, in display order.
type FieldInput struct {
	Key     string
	Name    string
	Type    fieldtype.Type
	Source  Source
	Options *fieldtype.Options
}

// Source compatibility: a built-in provider writes a value the service
// derives itself, so the field must be able to hold every value the provider
// can produce; otherwise filling it would fail long after the template was
// accepted. external_data and manual fit every type.
//
//	source               types             constraint on the options
//	client.company_name  text              max_length ≥ 200 (clients.MaxCompanyNameLength)
//	client.org_number    text              max_length ≥ 50 (clients.MaxOrgNumberLength)
//	client.country       text              max_length ≥ 2
//	client.credit_limit  currency, number  decimals ≥ 2 (currency: effective
//	                                       decimals, so JPY needs decimals set);
//	                                       number: no min/max, decimals unset or ≥ 2
//	act.created_at       date              —
//
// The provider's value is the client's field as stored (credit_limit in its
// canonical decimal form) or the act's created_at as a UTC date, passed
// through fieldtype.Normalize.
var builtinTypes = map[Source][]fieldtype.Type{
	SourceClientCompanyName: {fieldtype.Text},
	SourceClientOrgNumber:   {fieldtype.Text},
	SourceClientCountry:     {fieldtype.Text},
	SourceClientCreditLimit: {fieldtype.Currency, fieldtype.Number},
	SourceActCreatedAt:      {fieldtype.Date},
}

// builtinTextLength is the longest text each text provider produces.
var builtinTextLength = map[Source]int{
	SourceClientCompanyName: clients.MaxCompanyNameLength,
	SourceClientOrgNumber:   clients.MaxOrgNumberLength,
	SourceClientCountry:     2,
}

const creditLimitDecimals = clients.CreditLimitDecimals

// CheckSource says why a field of type t with effective options eff cannot
// take its value from source, or "" when it can. eff is
// fieldtype.Effective's result for valid options.
func CheckSource(source Source, t fieldtype.Type, eff *fieldtype.Options) string {
	if !ValidSource(source) {
		names := make([]string, len(BuiltinSources))
		for i, b := range BuiltinSources {
			names[i] = string(b)
		}
		return "must be one of external_data, manual, " + strings.Join(names, ", ")
	}
	types, builtin := builtinTypes[source]
	if !builtin {
		return ""
	}
	ok := false
	for _, bt := range types {
		ok = ok || bt == t
	}
	if !ok {
		names := make([]string, len(types))
		for i, bt := range types {
			names[i] = string(bt)
		}
		return fmt.Sprintf("%s fills fields of type %s only", source, strings.Join(names, " or "))
	}
	if n, isText := builtinTextLength[source]; isText && eff != nil && eff.MaxLength != nil && *eff.MaxLength < n {
		return fmt.Sprintf("%s produces up to %d characters; options.max_length must be at least %d", source, n, n)
	}
	if source == SourceClientCreditLimit && eff != nil {
		if eff.Min != nil || eff.Max != nil {
			return string(source) + " cannot promise a range; options.min and options.max must not be set"
		}
		if eff.Decimals != nil && *eff.Decimals < creditLimitDecimals {
			return fmt.Sprintf("%s has %d fractional digits; options.decimals must be at least %d", source, creditLimitDecimals, creditLimitDecimals)
		}
	}
	return ""
}

// field is a validated field ready to store.
type field struct {
	FieldInput
	options *string // effective options JSON, nil when none
}

// validate checks in and returns its fields with their effective options,
// or apperr.Invalid with messages keyed like the request body:
// "name", "fields", "fields[2].key", "fields[0].options.currency", ….
func validate(in Input) ([]field, error) {
	fe := apperr.FieldErrors{}
	if msg := checkLabel(in.Name, MaxNameLength); msg != "" {
		fe.Add("name", msg)
	}
	switch {
	case len(in.Fields) == 0:
		fe.Add("fields", "must have at least one field")
	case len(in.Fields) > MaxFields:
		fe.Add("fields", fmt.Sprintf("must have at most %d fields", MaxFields))
	}
	out := make([]field, len(in.Fields))
	seen := make(map[string]int, len(in.Fields))
	for i, f := range in.Fields {
		p := "fields[" + strconv.Itoa(i) + "]."
		switch {
		case !fieldtype.ValidKey(f.Key):
			fe.Add(p+"key", "must match ^[a-z][a-z0-9_]{0,62}$")
		default:
			if j, dup := seen[f.Key]; dup {
				fe.Add(p+"key", fmt.Sprintf("duplicates fields[%d].key; keys must be unique within the template", j))
			} else {
				seen[f.Key] = i
			}
		}
		if msg := checkLabel(f.Name, MaxNameLength); msg != "" {
			fe.Add(p+"name", msg)
		}
		errs := fieldtype.ValidateOptions(f.Type, f.Options)
		keys := make([]string, 0, len(errs))
		for k := range errs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, m := range errs[k] {
				fe.Add(p+k, m)
			}
		}
		var eff *fieldtype.Options
		if len(errs) == 0 {
			eff = fieldtype.Effective(f.Type, f.Options)
		}
		// With invalid options eff is nil and only the type is checked.
		if msg := CheckSource(f.Source, f.Type, eff); msg != "" {
			fe.Add(p+"source", msg)
		}
		out[i] = field{FieldInput: f}
		if eff != nil {
			b, err := json.Marshal(eff)
			if err != nil {
				return nil, fmt.Errorf("templates: encode options of fields[%d]: %w", i, err)
			}
			s := string(b)
			out[i].options = &s
		}
	}
	if err := fe.Err(apperr.Invalid, "The template is invalid."); err != nil {
		return nil, err
	}
	return out, nil
}

// checkLabel is fieldtype.CheckLabel (one rule for every display label),
// except that a blank name reads as missing rather than as white space.
func checkLabel(s string, maxLen int) string {
	if strings.TrimSpace(s) == "" {
		return "is required"
	}
	return fieldtype.CheckLabel(s, maxLen)
}
