package fieldtype

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Normalize checks value against the field type t with options o and
// returns its canonical form (see the package documentation for the rules
// of each type). It never rounds, trims or guesses: a value that is not
// already exactly representable is invalid.
//
// A value problem is returned as a [*ValueError]. When t or o themselves are
// invalid, the error is an [*OptionsError] instead: the caller stored a field
// definition that ValidateOptions would have rejected.
//
// Normalize is idempotent: when it returns c without error, Normalize(t, o, c)
// returns c.
func Normalize(t Type, o *Options, value string) (string, error) {
	var errs fieldErrs
	s := compile(t, o, "", &errs)
	if errs != nil {
		return "", &OptionsError{Fields: errs}
	}
	if t == Table {
		return s.normalizeTable(value)
	}
	c, reason := s.normalizeScalar(value)
	if reason != "" {
		return "", &ValueError{Type: t, Reason: reason}
	}
	return c, nil
}

// normalizeScalar returns the canonical form of a scalar value, or the
// reason it is invalid.
func (s *spec) normalizeScalar(v string) (string, string) {
	switch s.typ {
	case Text:
		return v, checkText(v, s.maxLen)
	case Number, Currency, Percentage:
		return s.dec.normalize(v)
	case Integer:
		return normalizeInteger(v)
	case Boolean:
		if v == "true" || v == "false" {
			return v, ""
		}
		return "", `must be "true" or "false"`
	case Date:
		return normalizeDate(v)
	case Select:
		if _, ok := s.choiceAt[v]; ok {
			return v, ""
		}
		return "", s.choicesReason()
	}
	return "", "has an unsupported type" // unreachable: compile rejects other types
}

// choicesReason names the choices when they fit in a short message, since
// that is what the sender needs to fix the value.
func (s *spec) choicesReason() string {
	quoted := make([]string, len(s.choices))
	for i, c := range s.choices {
		quoted[i] = strconv.Quote(c)
	}
	if list := strings.Join(quoted, ", "); len(list) <= 200 {
		return "must be one of " + list
	}
	return "must be one of the field's " + strconv.Itoa(len(s.choices)) + " choices"
}

// checkText checks a text value: valid UTF-8, no control characters other
// than tab, line feed and carriage return, at most maxLen code points.
func checkText(v string, maxLen int) string {
	// A code point takes at most 4 bytes, so a short enough string cannot be
	// too long and the count is skipped.
	if len(v) > maxLen && utf8.RuneCountInString(v) > maxLen {
		return "must be at most " + strconv.Itoa(maxLen) + " characters long"
	}
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				return "must not contain control characters other than tab and line breaks"
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && size == 1 {
			return "must be valid UTF-8"
		}
		if r >= 0x80 && r <= 0x9f { // C1 controls
			return "must not contain control characters other than tab and line breaks"
		}
		i += size
	}
	return ""
}

// maxIntegerInput bounds an integer string including leading zeros, for the
// same reason as maxDecimalInput.
const maxIntegerInput = 100

func normalizeInteger(v string) (string, string) {
	const syntax = `must be a whole number such as 42 or -7 (digits with an optional leading "-"; no "+", decimal point, exponent or spaces)`
	if v == "" {
		return "", "must be a whole number, not empty"
	}
	if len(v) > maxIntegerInput {
		return "", "must be at most " + strconv.Itoa(maxIntegerInput) + " characters long"
	}
	digits, neg := strings.CutPrefix(v, "-")
	if !allDigits(digits) {
		return "", syntax
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", ""
	}
	if neg {
		digits = "-" + digits
	}
	// The grammar is already checked, so the only ParseInt error left is a
	// value outside the int64 range.
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return "", "must be between -9223372036854775808 and 9223372036854775807"
	}
	return strconv.FormatInt(n, 10), ""
}

const dateLayout = "2006-01-02"

func normalizeDate(v string) (string, string) {
	const syntax = "must be a calendar date YYYY-MM-DD such as 2024-12-31"
	// time.Parse alone is too lenient for a canonical form (it would, for
	// instance, accept a year 0000 that PostgreSQL rejects), so the value
	// must also survive a round trip through Format unchanged.
	if len(v) != len(dateLayout) {
		return "", syntax
	}
	t, err := time.Parse(dateLayout, v)
	if err != nil {
		if strings.Contains(err.Error(), "out of range") {
			return "", "must be a date that exists in the calendar"
		}
		return "", syntax
	}
	if t.Format(dateLayout) != v {
		return "", syntax
	}
	if t.Year() < 1 {
		return "", "must be between 0001-01-01 and 9999-12-31"
	}
	return v, ""
}
