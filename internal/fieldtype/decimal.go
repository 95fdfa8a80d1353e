package fieldtype

import (
	"strconv"
	"strings"
)

// decimal is an exact decimal number kept as its digit strings. Values are
// only parsed, compared and re-formatted, never computed with, so digit
// strings are exact and cheaper than math/big.
type decimal struct {
	neg  bool   // never true for zero
	int  string // integer digits without leading zeros; "" when zero
	frac string // fractional digits without trailing zeros
}

// maxDecimalInput bounds the length of a decimal string, so that leading and
// trailing zeros (which the digit limits do not count) cannot be used to
// make a value arbitrarily long.
const maxDecimalInput = 100

const reasonDecimalSyntax = `must be a decimal number such as 1234.56 or -0.5 (digits with an optional leading "-" and an optional "." followed by digits; no "+", exponent, spaces or separators)`

// parseDecimal parses s with the grammar -?[0-9]+(\.[0-9]+)?. It enforces
// MaxIntegerDigits but not the fractional limit, which depends on the field.
// It returns a non-empty reason when s is invalid.
func parseDecimal(s string) (decimal, string) {
	if s == "" {
		return decimal{}, "must be a decimal number, not empty"
	}
	if len(s) > maxDecimalInput {
		return decimal{}, "must be at most " + strconv.Itoa(maxDecimalInput) + " characters long"
	}
	var d decimal
	rest := s
	if rest[0] == '-' {
		d.neg = true
		rest = rest[1:]
	}
	intPart, fracPart, hasPoint := strings.Cut(rest, ".")
	if !allDigits(intPart) || (hasPoint && !allDigits(fracPart)) {
		return decimal{}, reasonDecimalSyntax
	}
	d.int = strings.TrimLeft(intPart, "0")
	d.frac = strings.TrimRight(fracPart, "0")
	if len(d.int) > MaxIntegerDigits {
		return decimal{}, "must have at most " + strconv.Itoa(MaxIntegerDigits) + " digits before the decimal point"
	}
	if d.int == "" && d.frac == "" {
		d.neg = false // "-0" and "-0.00" are zero, and zero has one spelling
	}
	return d, ""
}

// allDigits reports whether s is a non-empty run of ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// format formats d with exactly places fractional digits, or with as few as
// needed when places < 0. The caller guarantees len(d.frac) <= places.
func (d decimal) format(places int) string {
	var b strings.Builder
	b.Grow(len(d.int) + len(d.frac) + 3 + max(places, 0))
	if d.neg {
		b.WriteByte('-')
	}
	if d.int == "" {
		b.WriteByte('0')
	} else {
		b.WriteString(d.int)
	}
	switch {
	case places > 0:
		b.WriteByte('.')
		b.WriteString(d.frac)
		for i := len(d.frac); i < places; i++ {
			b.WriteByte('0')
		}
	case places < 0 && d.frac != "":
		b.WriteByte('.')
		b.WriteString(d.frac)
	}
	return b.String()
}

// cmp compares two decimals exactly: -1 if d < b, 0 if equal, +1 if d > b.
func (d decimal) cmp(b decimal) int {
	if d.neg != b.neg {
		if d.neg {
			return -1
		}
		return 1
	}
	c := cmpAbs(d, b)
	if d.neg {
		return -c
	}
	return c
}

// cmpAbs compares magnitudes. Without leading zeros a longer integer part is
// larger; without trailing zeros fractional parts compare as strings ("5" <
// "51" just as 0.5 < 0.51).
func cmpAbs(a, b decimal) int {
	if len(a.int) != len(b.int) {
		if len(a.int) < len(b.int) {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.int, b.int); c != 0 {
		return c
	}
	return strings.Compare(a.frac, b.frac)
}

// decimalRule is what a decimal-valued field allows.
type decimalRule struct {
	places   int // exact fractional digits of the canonical form; -1: as few as needed
	min, max *decimal
}

// normalize checks s against the rule and returns its canonical form, or a
// reason why s is invalid.
func (r decimalRule) normalize(s string) (string, string) {
	d, reason := r.parse(s)
	if reason != "" {
		return "", reason
	}
	return d.format(r.places), ""
}

// parse parses s and checks it against the rule.
func (r decimalRule) parse(s string) (decimal, string) {
	d, reason := parseDecimal(s)
	if reason != "" {
		return decimal{}, reason
	}
	limit := r.places
	if limit < 0 {
		limit = MaxDecimals
	}
	if len(d.frac) > limit {
		// Never round: a value with more precision than the field holds is
		// the sender's mistake, and rounding it would hide that.
		if limit == 0 {
			return decimal{}, "must be a whole number (no decimal places)"
		}
		return decimal{}, "must have at most " + strconv.Itoa(limit) + " decimal places"
	}
	if r.min != nil && d.cmp(*r.min) < 0 {
		return decimal{}, "must be at least " + r.min.format(r.places)
	}
	if r.max != nil && d.cmp(*r.max) > 0 {
		return decimal{}, "must be at most " + r.max.format(r.places)
	}
	return d, ""
}
