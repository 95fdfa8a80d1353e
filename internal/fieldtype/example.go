package fieldtype

import "strings"

// Example returns a valid value for the field, in canonical form: the
// reference integration fabricates results with it, the demo seeds acts with
// it, and tests use it as a known-good value. It is deterministic, and it
// returns "" only when ValidateOptions reports a problem.
func Example(t Type, o *Options) string {
	var errs fieldErrs
	s := compile(t, o, "", &errs)
	if errs != nil {
		return ""
	}
	if t == Table {
		// Two identical rows: enough to show the shape, and every cell is
		// its column's own example.
		cells := make([]string, len(s.columns))
		filled := make([]bool, len(s.columns))
		for i, c := range s.columns {
			cells[i], filled[i] = c.spec.example(), true
		}
		var b strings.Builder
		b.WriteByte('[')
		writeRow(&b, s.columns, cells, filled)
		b.WriteByte(',')
		writeRow(&b, s.columns, cells, filled)
		b.WriteByte(']')
		return b.String()
	}
	return s.example()
}

// example returns a canonical example of a scalar field.
func (s *spec) example() string {
	switch s.typ {
	case Text:
		const sample = "Sample text"
		if s.maxLen < len(sample) {
			return sample[:s.maxLen] // ASCII, so bytes are code points
		}
		return sample
	case Number, Currency:
		// 1234.5 cut or padded to the field's decimals, then moved into
		// [min, max]. Bounds are valid values themselves (ValidateOptions
		// checks that), so the result is always valid.
		d := decimal{int: "1234", frac: "5"}
		if s.dec.places == 0 {
			d.frac = ""
		}
		if s.dec.min != nil && d.cmp(*s.dec.min) < 0 {
			d = *s.dec.min
		}
		if s.dec.max != nil && d.cmp(*s.dec.max) > 0 {
			d = *s.dec.max
		}
		return d.format(s.dec.places)
	case Integer:
		return "42"
	case Percentage:
		d := decimal{int: "12", frac: "5"}
		if s.dec.places == 0 {
			d.frac = ""
		}
		return d.format(s.dec.places)
	case Boolean:
		return "true"
	case Date:
		return "2024-12-31"
	case Select:
		return s.choices[0]
	}
	return ""
}
