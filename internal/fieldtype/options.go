package fieldtype

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// spec is a field definition whose options have been checked and parsed:
// the one place where defaults are decided, shared by Normalize, Effective
// and Example so that they cannot disagree.
type spec struct {
	typ      Type
	maxLen   int            // text: effective max_length
	dec      decimalRule    // number, currency, percentage
	currency string         // currency: the ISO 4217 code
	choices  []string       // select, in order
	choiceAt map[string]int // select: index of each choice, for O(1) lookups in big tables
	columns  []column       // table
}

// column is a checked table column.
type column struct {
	key, name string
	spec      *spec
}

// fieldErrs collects field-level messages keyed by option path.
type fieldErrs map[string][]string

func (e *fieldErrs) add(key, msg string) {
	if *e == nil {
		*e = fieldErrs{}
	}
	(*e)[key] = append((*e)[key], msg)
}

// ValidateOptions checks a field's type and options as given at template
// creation. It returns nil when they are valid, and otherwise messages keyed
// by the offending property relative to the field: "type",
// "options.decimals", "options.choices[2]",
// "options.columns[1].options.currency" and so on. Callers prefix the keys
// with the field's own position ("fields[3].").
func ValidateOptions(t Type, o *Options) map[string][]string {
	var errs fieldErrs
	compile(t, o, "", &errs)
	return errs
}

// compile checks (t, o) and returns the parsed spec. Problems are added to
// errs under keys starting with prefix; the returned spec is meaningful only
// when none were added.
func compile(t Type, o *Options, prefix string, errs *fieldErrs) *spec {
	s := &spec{typ: t}
	if !t.Valid() {
		errs.add(prefix+"type", "must be one of "+typeList())
		return s
	}
	if o == nil {
		o = &Options{}
	}
	allowed := allowedOptions[t]
	for _, p := range optionProps {
		if p.set(o) && allowed&p.bit == 0 {
			errs.add(prefix+"options."+p.name, "is not allowed for type "+string(t))
		}
	}
	op := prefix + "options."
	switch t {
	case Text:
		s.maxLen = MaxTextLength
		if o.MaxLength != nil {
			if *o.MaxLength < 1 || *o.MaxLength > MaxTextLength {
				errs.add(op+"max_length", "must be between 1 and "+strconv.Itoa(MaxTextLength))
			}
			s.maxLen = *o.MaxLength
		}
	case Number:
		s.dec.places = -1
		if o.Decimals != nil {
			if checkDecimals(*o.Decimals, op, errs) {
				s.dec.places = *o.Decimals
			}
		}
		s.dec.min = boundOption(o.Min, s.dec, op+"min", errs)
		s.dec.max = boundOption(o.Max, s.dec, op+"max", errs)
		if s.dec.min != nil && s.dec.max != nil && s.dec.min.cmp(*s.dec.max) > 0 {
			errs.add(op+"min", "must not be greater than max")
		}
	case Currency:
		s.dec.places = 0
		code := ""
		if o.Currency != nil {
			code = *o.Currency
		}
		unit, known := iso4217[code]
		switch {
		case o.Currency == nil:
			errs.add(op+"currency", "is required for type currency")
		case !isUpperCode(code):
			errs.add(op+"currency", "must be a three-letter ISO 4217 code in upper case, such as EUR")
		case !known:
			errs.add(op+"currency", "is not an active ISO 4217 currency code")
		}
		s.currency = code
		switch {
		case o.Decimals != nil:
			if checkDecimals(*o.Decimals, op, errs) {
				s.dec.places = *o.Decimals
			}
		case known && unit == noMinorUnit:
			errs.add(op+"decimals", "is required for "+code+", which has no ISO 4217 minor unit")
		case known:
			s.dec.places = unit
		}
	case Percentage:
		// Like number: free precision unless decimals fixes it (a rate shown
		// as 12.50 % must not silently become 12.5 or 12.505).
		s.dec.places = -1
		if o.Decimals != nil && checkDecimals(*o.Decimals, op, errs) {
			s.dec.places = *o.Decimals
		}
	case Select:
		s.choices = o.Choices
		s.choiceAt = checkChoices(o.Choices, op+"choices", errs)
	case Table:
		s.columns = compileColumns(o.Columns, op+"columns", errs)
	}
	return s
}

// An option property, as a bit in allowedOptions.
const (
	optMaxLength uint8 = 1 << iota
	optDecimals
	optMin
	optMax
	optCurrency
	optChoices
	optColumns
)

// allowedOptions lists, per type, the option properties it accepts.
var allowedOptions = map[Type]uint8{
	Text:       optMaxLength,
	Number:     optDecimals | optMin | optMax,
	Currency:   optCurrency | optDecimals,
	Percentage: optDecimals,
	Select:     optChoices,
	Table:      optColumns,
}

// optionProps names each property in wire spelling and says whether it is
// set: a pointer or slice that is not nil (an empty slice is set).
var optionProps = []struct {
	bit  uint8
	name string
	set  func(*Options) bool
}{
	{optMaxLength, "max_length", func(o *Options) bool { return o.MaxLength != nil }},
	{optDecimals, "decimals", func(o *Options) bool { return o.Decimals != nil }},
	{optMin, "min", func(o *Options) bool { return o.Min != nil }},
	{optMax, "max", func(o *Options) bool { return o.Max != nil }},
	{optCurrency, "currency", func(o *Options) bool { return o.Currency != nil }},
	{optChoices, "choices", func(o *Options) bool { return o.Choices != nil }},
	{optColumns, "columns", func(o *Options) bool { return o.Columns != nil }},
}

func typeList() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

func checkDecimals(d int, op string, errs *fieldErrs) bool {
	if d < 0 || d > MaxDecimals {
		errs.add(op+"decimals", "must be between 0 and "+strconv.Itoa(MaxDecimals))
		return false
	}
	return true
}

// boundOption parses a min or max option. A bound must itself be a valid
// value of the field (so it respects decimals): then the range [min, max] is
// never empty once min <= max, and Example can always produce a value.
func boundOption(v *string, r decimalRule, key string, errs *fieldErrs) *decimal {
	if v == nil {
		return nil
	}
	r.min, r.max = nil, nil
	d, reason := r.parse(*v)
	if reason != "" {
		errs.add(key, reason)
		return nil
	}
	return &d
}

func isUpperCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// CheckLabel checks a short single-line string such as a choice or a column
// name: valid UTF-8, no control characters, no surrounding white space (which
// would make "Yes" and "Yes " two different choices that look the same).
// CheckLabel checks a display label (a name or choice): non-empty, valid
// UTF-8, at most maxRunes characters, no surrounding white space and no
// control characters. It returns the reason, or "" when s is fine.
func CheckLabel(s string, maxRunes int) string {
	switch {
	case s == "":
		return "must not be empty"
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(s) > maxRunes:
		return "must be at most " + strconv.Itoa(maxRunes) + " characters long"
	case strings.TrimSpace(s) != s:
		return "must not begin or end with white space"
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// checkChoices checks a select field's choices and returns the index of each.
func checkChoices(choices []string, key string, errs *fieldErrs) map[string]int {
	switch {
	case choices == nil:
		errs.add(key, "is required for type select")
		return nil
	case len(choices) == 0:
		errs.add(key, "must not be empty")
		return nil
	case len(choices) > MaxChoices:
		errs.add(key, "must have at most "+strconv.Itoa(MaxChoices)+" choices")
		return nil
	}
	seen := make(map[string]int, len(choices))
	for i, c := range choices {
		k := key + "[" + strconv.Itoa(i) + "]"
		if reason := CheckLabel(c, MaxChoiceLength); reason != "" {
			errs.add(k, reason)
			continue
		}
		if j, dup := seen[c]; dup {
			errs.add(k, "duplicates choice "+strconv.Itoa(j))
			continue
		}
		seen[c] = i
	}
	return seen
}

func compileColumns(cols []Column, key string, errs *fieldErrs) []column {
	switch {
	case cols == nil:
		errs.add(key, "is required for type table")
		return nil
	case len(cols) == 0:
		errs.add(key, "must not be empty")
		return nil
	case len(cols) > MaxColumns:
		errs.add(key, "must have at most "+strconv.Itoa(MaxColumns)+" columns")
		return nil
	}
	out := make([]column, len(cols))
	seen := make(map[string]int, len(cols))
	for i, c := range cols {
		p := key + "[" + strconv.Itoa(i) + "]."
		if !ValidKey(c.Key) {
			errs.add(p+"key", "must match ^[a-z][a-z0-9_]{0,62}$")
		} else if j, dup := seen[c.Key]; dup {
			errs.add(p+"key", "duplicates the key of column "+strconv.Itoa(j))
		} else {
			seen[c.Key] = i
		}
		if reason := CheckLabel(c.Name, MaxNameLength); reason != "" {
			errs.add(p+"name", reason)
		}
		var cs *spec
		if c.Type == Table {
			// A cell is one string; nesting tables would make cells
			// structured and the canonical form recursive.
			errs.add(p+"type", "must be a scalar type; a column cannot be a table")
			cs = &spec{typ: Table}
		} else {
			cs = compile(c.Type, c.Options, p, errs)
		}
		out[i] = column{key: c.Key, name: c.Name, spec: cs}
	}
	return out
}

// ValidKey reports whether k matches ^[a-z][a-z0-9_]{0,62}$, the grammar of
// template field keys and table column keys alike: keys are JSON object keys
// in every row and identifiers in integrations, so they are kept plain.
func ValidKey(k string) bool {
	if k == "" || len(k) > 63 || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// Effective returns the options that apply to a field once defaults are
// filled in, as a fresh value sharing no memory with o. It is the shape to
// put into data-point snapshots and event payloads, so that an integration
// never needs to know the defaults: text gets its max_length, currency its
// decimals (from ISO 4217), number its min/max in canonical form, table its
// columns with each column's effective options. Types without options
// (integer, percentage, boolean, date) and a number without options give
// nil, which is JSON null. Effective returns nil when ValidateOptions
// reports a problem.
func Effective(t Type, o *Options) *Options {
	var errs fieldErrs
	s := compile(t, o, "", &errs)
	if errs != nil {
		return nil
	}
	return s.effective()
}

func (s *spec) effective() *Options {
	switch s.typ {
	case Text:
		return &Options{MaxLength: ptr(s.maxLen)}
	case Number:
		if s.dec.places < 0 && s.dec.min == nil && s.dec.max == nil {
			return nil
		}
		o := &Options{}
		if s.dec.places >= 0 {
			o.Decimals = ptr(s.dec.places)
		}
		if s.dec.min != nil {
			o.Min = ptr(s.dec.min.format(s.dec.places))
		}
		if s.dec.max != nil {
			o.Max = ptr(s.dec.max.format(s.dec.places))
		}
		return o
	case Currency:
		return &Options{Currency: ptr(s.currency), Decimals: ptr(s.dec.places)}
	case Percentage:
		if s.dec.places < 0 {
			return nil
		}
		return &Options{Decimals: ptr(s.dec.places)}
	case Select:
		return &Options{Choices: append([]string(nil), s.choices...)}
	case Table:
		cols := make([]Column, len(s.columns))
		for i, c := range s.columns {
			cols[i] = Column{Key: c.key, Name: c.name, Type: c.spec.typ, Options: c.spec.effective()}
		}
		return &Options{Columns: cols}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
