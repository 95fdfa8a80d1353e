// Package money holds Decimal, the exact decimal number used for monetary
// amounts in the API (credit_limit). The spec makes it a JSON number, so it
// marshals as a number literal; internally it is the literal's canonical
// decimal text and never passes through float64.
package money

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Decimal is an exact decimal value; its zero value is 0.
type Decimal struct {
	s string // canonical decimal text ("0", "-12.5", "250000.25")
}

// isJSONNumber reports whether s is a JSON number (RFC 8259) with an
// exponent of at most three digits: what a client may send. Every scanned
// credit limit passes here, so it is a loop rather than a regular
// expression; TestIsJSONNumberMatchesTheGrammar and FuzzIsJSONNumber hold it
// to the grammar written as one,
// ^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$.
func isJSONNumber(s string) bool {
	i, n := 0, len(s)
	digits := func() int {
		start := i
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < n && s[i] == '-' {
		i++
	}
	switch {
	case i < n && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < n && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if d := digits(); d == 0 || d > 3 {
			return false
		}
	}
	return i == n
}

// Parse reads a decimal in JSON number syntax ("12", "-0.50", "2.5e3"). The
// value is exact, however small or large: an exponent moves the decimal
// point in the digits as written, never through float64 or a rounded
// expansion, so 1e-400 is 0.000…1 with 400 fractional digits and not 0.
// Exponents are limited to three digits so that a hostile "1e999999"
// cannot allocate a huge number.
func Parse(s string) (Decimal, error) {
	if len(s) > 100 || !isJSONNumber(s) {
		return Decimal{}, fmt.Errorf("%q is not a decimal number", s)
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	if !hasExp {
		// Plain decimals (every value read back from the database, most
		// client input) canonicalize by trimming: listing clients scans
		// one per row.
		return Decimal{s: canonical(s)}, nil
	}
	e, err := strconv.Atoi(strings.TrimPrefix(exp, "+"))
	if err != nil {
		return Decimal{}, fmt.Errorf("%q is not a decimal number", s)
	}
	return Decimal{s: canonical(shift(mant, e))}, nil
}

// shift returns the plain decimal mant×10^e; mant matched the grammar's
// mantissa ("-12.5").
func shift(mant string, e int) string {
	sign := ""
	if rest, ok := strings.CutPrefix(mant, "-"); ok {
		sign, mant = "-", rest
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart) + e // digits before the point
	switch {
	case point <= 0:
		digits = strings.Repeat("0", 1-point) + digits
		point = 1
	case point > len(digits):
		digits += strings.Repeat("0", point-len(digits))
	}
	intDigits := strings.TrimLeft(digits[:point], "0")
	if intDigits == "" {
		intDigits = "0"
	}
	if point == len(digits) {
		return sign + intDigits
	}
	return sign + intDigits + "." + digits[point:]
}

// canonical trims a plain decimal that passed isJSONNumber: no trailing
// fractional zeros, no empty fraction, no negative zero. The grammar already
// rules out leading zeros in the integer part.
func canonical(s string) string {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

// MustParse is Parse for constants; it panics on bad input.
func MustParse(s string) Decimal {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// String returns the canonical decimal text.
func (d Decimal) String() string {
	if d.s == "" {
		return "0"
	}
	return d.s
}

// Rat returns the value as a big.Rat.
func (d Decimal) Rat() *big.Rat {
	r, _ := new(big.Rat).SetString(d.String())
	return r
}

// Scale is the number of fractional digits of the canonical form.
func (d Decimal) Scale() int {
	if i := strings.IndexByte(d.String(), '.'); i >= 0 {
		return len(d.String()) - i - 1
	}
	return 0
}

// Sign returns -1, 0 or +1.
func (d Decimal) Sign() int { return d.Rat().Sign() }

// Cmp compares d and e.
func (d Decimal) Cmp(e Decimal) int { return d.Rat().Cmp(e.Rat()) }

// MarshalJSON writes the value as a JSON number literal.
func (d Decimal) MarshalJSON() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalJSON reads a JSON number literal (or a string holding one, which
// some clients send to avoid float rounding on their side).
func (d *Decimal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		b = bytes.Trim(b, `"`)
	}
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Value implements driver.Valuer: the canonical decimal text, which both
// PostgreSQL NUMERIC and SQLite TEXT columns take without rounding.
func (d Decimal) Value() (driver.Value, error) { return d.String(), nil }

// Scan implements sql.Scanner for NUMERIC (text or []byte from pgx) and TEXT.
func (d *Decimal) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	case int64:
		s = strconv.FormatInt(v, 10)
	case float64:
		// SQLite may hand back a REAL if a value was ever stored numerically;
		// format it shortest-exact rather than rounding to fixed places.
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		*d = Decimal{}
		return nil
	default:
		return fmt.Errorf("money: cannot scan %T into Decimal", src)
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
