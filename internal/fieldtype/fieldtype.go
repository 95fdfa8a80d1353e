package fieldtype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Type is a template field type, spelled as on the wire.
type Type string

// The field types. Every type except Table is scalar and may be a table
// column's type.
const (
	Text       Type = "text"
	Number     Type = "number"
	Integer    Type = "integer"
	Currency   Type = "currency"
	Percentage Type = "percentage"
	Boolean    Type = "boolean"
	Date       Type = "date"
	Select     Type = "select"
	Table      Type = "table"
)

// Types lists every field type in documentation order. Treat it as read-only.
var Types = []Type{Text, Number, Integer, Currency, Percentage, Boolean, Date, Select, Table}

// Valid reports whether t is one of [Types].
func (t Type) Valid() bool {
	switch t {
	case Text, Number, Integer, Currency, Percentage, Boolean, Date, Select, Table:
		return true
	}
	return false
}

// Scalar reports whether t is a valid type whose values are single strings,
// i.e. every type that may be a table column's type.
func (t Type) Scalar() bool { return t.Valid() && t != Table }

// Limits. They are part of the contract, so they are exported for the OpenAPI
// descriptions, the UI and tests.
const (
	// MaxTextLength is the default and the largest max_length of a text
	// value, in Unicode code points.
	MaxTextLength = 10000
	// MaxDecimals is the largest decimals option, and the most significant
	// fractional digits any decimal value may carry.
	MaxDecimals = 10
	// MaxIntegerDigits is the most digits a decimal value may have before the
	// point (leading zeros not counted): enough for any amount in any
	// currency, small enough to fit a NUMERIC(40,10) column.
	MaxIntegerDigits = 30
	// MaxChoices is the most choices a select field may have.
	MaxChoices = 500
	// MaxChoiceLength is the longest choice, in Unicode code points.
	MaxChoiceLength = 200
	// MaxColumns is the most columns a table field may have.
	MaxColumns = 50
	// MaxNameLength is the longest column name, in Unicode code points.
	MaxNameLength = 200
	// MaxTableRows is the most rows a table value may have.
	MaxTableRows = 1000
	// MaxTableBytes is the largest table value, in bytes, both as received
	// and in canonical form.
	MaxTableBytes = 1 << 20
)

// Options are a field's type-specific options: the FieldOptions object of
// the API. All properties are optional and only those meaningful for the
// field's type may be present (see the package documentation). A nil slice
// is absent; an empty non-nil slice is present, and never valid (choices and
// columns must not be empty, and other types do not allow them).
type Options struct {
	// MaxLength bounds a text value, in Unicode code points.
	MaxLength *int `json:"max_length,omitempty"`
	// Currency is the ISO 4217 alphabetic code of a currency field.
	Currency *string `json:"currency,omitempty"`
	// Decimals is the number of fractional digits of a number or currency
	// value; values are padded to it and never rounded to it.
	Decimals *int `json:"decimals,omitempty"`
	// Min and Max are inclusive decimal bounds of a number value. When
	// decoding JSON they may be given as strings or numbers.
	Min *string `json:"min,omitempty"`
	Max *string `json:"max,omitempty"`
	// Choices are the allowed values of a select field, in display order.
	Choices []string `json:"choices,omitempty"`
	// Columns are the columns of a table field, in display order.
	Columns []Column `json:"columns,omitempty"`
}

// Column is one column of a table field.
type Column struct {
	// Key names the cell in each row object.
	Key string `json:"key"`
	// Name is the display label.
	Name string `json:"name"`
	// Type is the cell type; any scalar type.
	Type Type `json:"type"`
	// Options are the cell type's options; nil for types that need none.
	Options *Options `json:"options,omitempty"`
}

// optionsJSON mirrors Options for decoding, with min and max kept raw so that
// both JSON strings and JSON numbers can be accepted.
type optionsJSON struct {
	MaxLength *int            `json:"max_length"`
	Currency  *string         `json:"currency"`
	Decimals  *int            `json:"decimals"`
	Min       json.RawMessage `json:"min"`
	Max       json.RawMessage `json:"max"`
	Choices   []string        `json:"choices"`
	Columns   []Column        `json:"columns"`
}

// UnmarshalJSON decodes options strictly: unknown properties are an error
// (a misspelt "maxLength" silently ignored would be a validation hole), and
// min and max may be JSON strings or JSON numbers. A number is kept as its
// literal text, never parsed as float64; whether it is an acceptable decimal
// is for [ValidateOptions] to say.
func (o *Options) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var aux optionsJSON
	if err := dec.Decode(&aux); err != nil {
		return fmt.Errorf("field options: %w", err)
	}
	minV, err := rawDecimal("min", aux.Min)
	if err != nil {
		return err
	}
	maxV, err := rawDecimal("max", aux.Max)
	if err != nil {
		return err
	}
	*o = Options{
		MaxLength: aux.MaxLength,
		Currency:  aux.Currency,
		Decimals:  aux.Decimals,
		Min:       minV,
		Max:       maxV,
		Choices:   aux.Choices,
		Columns:   aux.Columns,
	}
	return nil
}

// rawDecimal turns a raw min/max property into its string form.
func rawDecimal(name string, raw json.RawMessage) (*string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("field options: %s: %w", name, err)
		}
		return &s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		s := string(raw) // the decoder already checked it is a JSON number
		return &s, nil
	}
	return nil, fmt.Errorf("field options: %s must be a decimal string or a number", name)
}

// ValueError reports a value that is invalid for its field. Its message is
// meant for the API's field-level error list and never contains more of the
// value than a short excerpt.
type ValueError struct {
	// Type is the type the value was checked against (the column's type
	// for a table cell).
	Type Type
	// Path locates the problem inside a table value, such as "[3].amount"
	// (0-based row index, then column key) or "[3]"; "" for the whole value.
	Path string
	// Reason says what is wrong, e.g. "must be a date YYYY-MM-DD".
	Reason string
}

func (e *ValueError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// OptionsError is returned by [Normalize] when the type or options
// themselves are invalid: a programming or data error (the template should
// have been rejected at creation), not a problem with the value.
type OptionsError struct {
	// Fields holds the messages of [ValidateOptions].
	Fields map[string][]string
}

func (e *OptionsError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("invalid field definition:")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " %s: %s", k, strings.Join(e.Fields[k], ", "))
	}
	return b.String()
}
