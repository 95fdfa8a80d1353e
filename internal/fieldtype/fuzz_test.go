package fieldtype

// Fuzz targets. Run one at a time, anchored so that no name matches another:
//
//	go test -run='^$' -fuzz='^FuzzNormalizeNumber$' -fuzztime=20s ./internal/fieldtype
//	go test -run='^$' -fuzz='^FuzzNormalizeScalar$' -fuzztime=20s ./internal/fieldtype
//	go test -run='^$' -fuzz='^FuzzNormalizeTable$'  -fuzztime=20s ./internal/fieldtype
//	go test -run='^$' -fuzz='^FuzzOptions$'         -fuzztime=20s ./internal/fieldtype
//
// Each target checks the result against an independent oracle (math/big,
// time, encoding/json) rather than against the code under test, in both
// directions: what is accepted is right, and what is right is accepted.

import (
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var (
	decimalGrammar = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	integerGrammar = regexp.MustCompile(`^-?[0-9]+$`)
)

func mustRat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("big.Rat cannot parse %q", s)
	}
	return r
}

// fracDigits returns the digits after the point of a grammatical decimal.
func fracDigits(s string) string {
	_, f, _ := strings.Cut(s, ".")
	return f
}

// checkRoundTrip fails unless c is a fixed point of Normalize.
func checkRoundTrip(t *testing.T, ty Type, o *Options, c string) {
	t.Helper()
	again, err := Normalize(ty, o, c)
	if err != nil || again != c {
		t.Fatalf("not idempotent: Normalize(%q) = %q, %v", c, again, err)
	}
}

func checkValueError(t *testing.T, err error) {
	t.Helper()
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Reason == "" {
		t.Fatalf("error %T %v, want *ValueError with a reason", err, err)
	}
}

// checkDecimal checks a decimal-typed result against math/big: an accepted
// value keeps its numeric value, has the right number of fractional digits
// and lies within the bounds; a rejected value really breaks a rule.
// places < 0 means no fixed decimals.
func checkDecimal(t *testing.T, value, c string, err error, places int, minS, maxS *string) {
	t.Helper()
	limit := places
	if limit < 0 {
		limit = MaxDecimals
	}
	grammatical := decimalGrammar.MatchString(value)
	if err == nil {
		if !grammatical || !decimalGrammar.MatchString(c) {
			t.Fatalf("accepted %q as %q outside the grammar", value, c)
		}
		if mustRat(t, value).Cmp(mustRat(t, c)) != 0 {
			t.Fatalf("%q normalized to %q, a different number", value, c)
		}
		f := fracDigits(c)
		switch {
		case places >= 0 && len(f) != places:
			t.Fatalf("%q has %d decimals, want %d", c, len(f), places)
		case places < 0 && strings.HasSuffix(f, "0"):
			t.Fatalf("%q keeps trailing zeros", c)
		case places < 0 && strings.Contains(c, ".") && f == "":
			t.Fatalf("%q has a bare point", c)
		}
		if ip, _, _ := strings.Cut(strings.TrimPrefix(c, "-"), "."); len(ip) > 1 && ip[0] == '0' {
			t.Fatalf("%q keeps leading zeros", c)
		}
		if c == "-0" || strings.HasPrefix(c, "-0.") && strings.Trim(fracDigits(c), "0") == "" {
			t.Fatalf("%q is a negative zero", c)
		}
	}
	// What the rules say, computed independently.
	inRange := true
	if grammatical {
		r := mustRat(t, value)
		if minS != nil && r.Cmp(mustRat(t, *minS)) < 0 {
			inRange = false
		}
		if maxS != nil && r.Cmp(mustRat(t, *maxS)) > 0 {
			inRange = false
		}
	}
	if err == nil && !inRange {
		t.Fatalf("%q accepted outside [%v, %v]", value, deref(minS), deref(maxS))
	}
	intPart, _, _ := strings.Cut(strings.TrimPrefix(value, "-"), ".")
	valid := grammatical && inRange && len(value) <= maxDecimalInput &&
		len(strings.TrimLeft(intPart, "0")) <= MaxIntegerDigits &&
		len(strings.TrimRight(fracDigits(value), "0")) <= limit
	if err != nil {
		checkValueError(t, err)
		if valid {
			t.Fatalf("%q rejected (%v) although it satisfies every rule", value, err)
		}
	} else if !valid {
		t.Fatalf("%q accepted as %q although it breaks a rule", value, c)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

func FuzzNormalizeNumber(f *testing.F) {
	for _, s := range []struct {
		v        string
		decimals int8
		min, max string
	}{
		{"0", -1, "", ""},
		{"-0.000", -1, "", ""},
		{"007.50", 2, "", ""},
		{"1.234", 2, "", ""},
		{"1.5", 0, "", ""},
		{"99.99", 2, "0", "100"},
		{"100.01", 2, "0", "100"},
		{"-5.5", -1, "-5.5", ""},
		{"1e3", -1, "", ""},
		{"+1", -1, "", ""},
		{".5", -1, "", ""},
		{"NaN", -1, "", ""},
		{"123456789012345678901234567890", -1, "", ""},
		{"0.00000000001", -1, "", ""},
		{"1.00000000000000", 10, "", ""},
		{"12", 11, "", ""},
		{"5", -1, "10", "1"},
	} {
		f.Add(s.v, s.decimals, s.min, s.max)
	}
	f.Fuzz(func(t *testing.T, value string, decimals int8, minS, maxS string) {
		o := &Options{}
		places := -1
		if decimals >= 0 {
			d := int(decimals) % (MaxDecimals + 2) // 11 is invalid, on purpose
			o.Decimals = &d
			places = d
		}
		if minS != "" {
			o.Min = &minS
		}
		if maxS != "" {
			o.Max = &maxS
		}
		c, err := Normalize(Number, o, value)
		if errs := ValidateOptions(Number, o); errs != nil {
			var oe *OptionsError
			if !errors.As(err, &oe) {
				t.Fatalf("invalid options %v, but Normalize returned %q, %v", errs, c, err)
			}
			return
		}
		checkDecimal(t, value, c, err, places, o.Min, o.Max)
		if err == nil {
			checkRoundTrip(t, Number, o, c)
		}
	})
}

// scalarFields are the definitions FuzzNormalizeScalar picks from.
var scalarFields = []struct {
	t Type
	o *Options
}{
	{Text, nil},
	{Text, &Options{MaxLength: ip(5)}},
	{Integer, nil},
	{Currency, eur},
	{Currency, jpy},
	{Currency, kwd},
	{Percentage, nil},
	{Boolean, nil},
	{Date, nil},
	{Select, yesNo},
}

func FuzzNormalizeScalar(f *testing.F) {
	for i, seeds := range [][]string{
		{"hello", "", "a\x00b", "\xff", "héllo 日本", "a\nb\tc\r"},
		{"héllo", "héllo!", "12345", "\u0085"},
		{"0", "-0", "00042", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1.0", "+1"},
		{"12", "-20.5", "1.234", "€12"},
		{"1500", "1500.0", "1.5"},
		{"1.5", "1.2345"},
		{"12.5", "105.50", "-30", "12.5%"},
		{"true", "false", "TRUE", "1"},
		{"2024-02-29", "2023-02-29", "0000-01-01", "9999-12-31", "2024-1-01", "2024-01-01T00:00:00Z"},
		{"Yes", "No", "N/A", "yes", "Yes "},
	} {
		for _, v := range seeds {
			f.Add(uint8(i), v)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, value string) {
		field := scalarFields[int(kind)%len(scalarFields)]
		c, err := Normalize(field.t, field.o, value)
		if err != nil {
			checkValueError(t, err)
		} else {
			checkRoundTrip(t, field.t, field.o, c)
		}
		switch field.t {
		case Text:
			maxLen := MaxTextLength
			if field.o != nil {
				maxLen = *field.o.MaxLength
			}
			valid := utf8.ValidString(value) && utf8.RuneCountInString(value) <= maxLen &&
				!strings.ContainsFunc(value, func(r rune) bool {
					return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r <= 0x9f
				})
			if valid != (err == nil) || err == nil && c != value {
				t.Fatalf("text %q: got %q, %v; valid by the rules: %v", value, c, err, valid)
			}
		case Integer:
			n, ok := new(big.Int).SetString(value, 10)
			valid := integerGrammar.MatchString(value) && len(value) <= maxIntegerInput && ok && n.IsInt64()
			if valid != (err == nil) {
				t.Fatalf("integer %q: got %q, %v; valid by the rules: %v", value, c, err, valid)
			}
			if valid && c != n.String() {
				t.Fatalf("integer %q normalized to %q, want %q", value, c, n.String())
			}
		case Currency, Percentage:
			places := -1
			if field.t == Currency {
				places = *Effective(field.t, field.o).Decimals
			}
			checkDecimal(t, value, c, err, places, nil, nil)
		case Boolean:
			if (value == "true" || value == "false") != (err == nil) || err == nil && c != value {
				t.Fatalf("boolean %q: got %q, %v", value, c, err)
			}
		case Date:
			d, perr := time.Parse(dateLayout, value)
			valid := perr == nil && d.Format(dateLayout) == value && d.Year() >= 1
			if valid != (err == nil) || err == nil && c != value {
				t.Fatalf("date %q: got %q, %v; valid by the rules: %v", value, c, err, valid)
			}
		case Select:
			valid := value == "Yes" || value == "No" || value == "N/A"
			if valid != (err == nil) || err == nil && c != value {
				t.Fatalf("select %q: got %q, %v", value, c, err)
			}
		}
	})
}

func FuzzNormalizeTable(f *testing.F) {
	for _, tc := range validCases() {
		if tc.t == Table {
			f.Add(tc.in)
		}
	}
	for _, tc := range invalidCases() {
		if tc.t == Table && len(tc.in) < 4096 {
			f.Add(tc.in)
		}
	}
	f.Add(Example(Table, tableCols))
	f.Fuzz(func(t *testing.T, value string) {
		c, err := Normalize(Table, tableCols, value)
		if err != nil {
			checkValueError(t, err)
			return
		}
		checkRoundTrip(t, Table, tableCols, c)
		if len(c) > MaxTableBytes {
			t.Fatalf("canonical form is %d bytes", len(c))
		}
		// The canonical form is an array of objects of strings and nulls
		// with exactly the column keys, in column order.
		var out []map[string]*string
		if err := json.Unmarshal([]byte(c), &out); err != nil {
			t.Fatalf("canonical %q: %v", c, err)
		}
		if len(out) > MaxTableRows {
			t.Fatalf("%d rows", len(out))
		}
		var keys strings.Builder
		for i, col := range tableCols.Columns {
			if i > 0 {
				keys.WriteByte(',')
			}
			keys.WriteString(`"` + col.Key + `":`)
		}
		// Independently of the token walk: decode the input with
		// encoding/json (numbers kept literal) and check that each cell
		// became its own normalized value.
		dec := json.NewDecoder(strings.NewReader(value))
		dec.UseNumber()
		var in []map[string]any
		if err := dec.Decode(&in); err != nil {
			t.Fatalf("accepted %q, which encoding/json rejects: %v", value, err)
		}
		if len(in) != len(out) {
			t.Fatalf("%d rows in, %d out", len(in), len(out))
		}
		for r := range in {
			if len(out[r]) != len(tableCols.Columns) {
				t.Fatalf("row %d has %d keys", r, len(out[r]))
			}
			for _, col := range tableCols.Columns {
				got, present := out[r][col.Key]
				if !present {
					t.Fatalf("row %d lacks %q", r, col.Key)
				}
				var raw string
				switch v := in[r][col.Key].(type) {
				case nil:
					if got != nil {
						t.Fatalf("row %d %s: empty cell became %q", r, col.Key, *got)
					}
					continue
				case string:
					raw = v
				case json.Number:
					raw = v.String()
				case bool:
					raw = map[bool]string{true: "true", false: "false"}[v]
				default:
					t.Fatalf("row %d %s: accepted a %T cell", r, col.Key, v)
				}
				want, err := Normalize(col.Type, col.Options, raw)
				if err != nil || got == nil || *got != want {
					t.Fatalf("row %d %s: %q became %v, want %q (%v)", r, col.Key, raw, got, want, err)
				}
			}
			for k := range in[r] {
				if _, ok := out[r][k]; !ok {
					t.Fatalf("row %d: unknown key %q accepted", r, k)
				}
			}
		}
	})
}

// FuzzOptions decodes arbitrary field definitions and checks the contract
// between ValidateOptions, Effective, Example and Normalize.
func FuzzOptions(f *testing.F) {
	for _, tc := range validOptions() {
		b, _ := json.Marshal(struct {
			Type    Type     `json:"type"`
			Options *Options `json:"options"`
		}{tc.t, tc.o})
		f.Add(b, Example(tc.t, tc.o))
	}
	for _, s := range []string{
		`{"type":"number","options":{"min":1e3}}`,
		`{"type":"number","options":{"decimals":2,"min":"0.001"}}`,
		`{"type":"currency","options":{"currency":"XAU"}}`,
		`{"type":"select","options":{"choices":[]}}`,
		`{"type":"table","options":{"columns":[{"key":"a","name":"A","type":"table"}]}}`,
		`{"type":"integer","options":{"choices":["a"]}}`,
		`{"type":"float"}`,
	} {
		f.Add([]byte(s), "1")
	}
	f.Fuzz(func(t *testing.T, data []byte, value string) {
		var def struct {
			Type    Type     `json:"type"`
			Options *Options `json:"options"`
		}
		if json.Unmarshal(data, &def) != nil {
			return
		}
		errs := ValidateOptions(def.Type, def.Options)
		c, err := Normalize(def.Type, def.Options, value)
		if errs != nil {
			var oe *OptionsError
			if !errors.As(err, &oe) || Example(def.Type, def.Options) != "" || Effective(def.Type, def.Options) != nil {
				t.Fatalf("invalid definition %v not reported consistently (%v)", errs, err)
			}
			return
		}
		ex := Example(def.Type, def.Options)
		if got, err := Normalize(def.Type, def.Options, ex); err != nil || got != ex {
			t.Fatalf("Example %q: %q, %v", ex, got, err)
		}
		eff := Effective(def.Type, def.Options)
		if errs := ValidateOptions(def.Type, eff); errs != nil {
			t.Fatalf("effective options invalid: %v", errs)
		}
		c2, err2 := Normalize(def.Type, eff, value)
		if c != c2 || (err == nil) != (err2 == nil) {
			t.Fatalf("%q: %q/%v under options, %q/%v under effective options", value, c, err, c2, err2)
		}
		if err == nil {
			checkRoundTrip(t, def.Type, def.Options, c)
		} else {
			checkValueError(t, err)
		}
		// Valid options survive a JSON round trip unchanged.
		if def.Options != nil {
			b, err := json.Marshal(def.Options)
			if err != nil {
				t.Fatal(err)
			}
			var back Options
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, def.Options) {
				t.Fatalf("options %s did not round-trip: %+v, %v", b, back, err)
			}
		}
	})
}
