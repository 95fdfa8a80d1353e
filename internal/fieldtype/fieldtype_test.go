package fieldtype

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func ip(i int) *int       { return &i }
func sp(s string) *string { return &s }

// Option sets shared by the tests below.
var (
	dec2      = &Options{Decimals: ip(2)}
	dec0      = &Options{Decimals: ip(0)}
	pct0to100 = &Options{Decimals: ip(2), Min: sp("0"), Max: sp("100")}
	eur       = &Options{Currency: sp("EUR")}
	jpy       = &Options{Currency: sp("JPY")}
	kwd       = &Options{Currency: sp("KWD")}
	yesNo     = &Options{Choices: []string{"Yes", "No", "N/A"}}
	tableCols = &Options{Columns: []Column{
		{Key: "name", Name: "Name", Type: Text},
		{Key: "amount", Name: "Amount", Type: Number, Options: dec2},
		{Key: "qty", Name: "Quantity", Type: Integer},
		{Key: "ok", Name: "OK", Type: Boolean},
		{Key: "on", Name: "Date", Type: Date},
		{Key: "cur", Name: "Price", Type: Currency, Options: eur},
		{Key: "pct", Name: "Share", Type: Percentage},
		{Key: "kind", Name: "Kind", Type: Select, Options: &Options{Choices: []string{"a", "b"}}},
	}}
)

// row builds the canonical row of tableCols with the given cells (raw JSON)
// and null everywhere else.
func row(cells map[string]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range tableCols.Columns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + c.Key + `":`)
		if v, ok := cells[c.Key]; ok {
			b.WriteString(v)
		} else {
			b.WriteString("null")
		}
	}
	b.WriteByte('}')
	return b.String()
}

type valueCase struct {
	name string
	t    Type
	o    *Options
	in   string
	want string
}

func validCases() []valueCase {
	return []valueCase{
		{"text plain", Text, nil, "hello", "hello"},
		{"text empty", Text, nil, "", ""},
		{"text keeps spaces", Text, nil, "  spaced  ", "  spaced  "},
		{"text line breaks and tab", Text, nil, "a\nb\tc\r\n", "a\nb\tc\r\n"},
		{"text unicode", Text, nil, "héllo 日本 🎉", "héllo 日本 🎉"},
		{"text max_length counts runes", Text, &Options{MaxLength: ip(5)}, "héllo", "héllo"},
		{"text default max", Text, nil, strings.Repeat("é", MaxTextLength), strings.Repeat("é", MaxTextLength)},

		{"number zero", Number, nil, "0", "0"},
		{"number minus zero", Number, nil, "-0", "0"},
		{"number leading zeros", Number, nil, "007", "7"},
		{"number trailing zeros", Number, nil, "1.50", "1.5"},
		{"number point zero", Number, nil, "2.0", "2"},
		{"number negative zero fraction", Number, nil, "-0.000", "0"},
		{"number negative", Number, nil, "-12.340", "-12.34"},
		{"number small", Number, nil, "0.0000000001", "0.0000000001"},
		{"number max integer digits", Number, nil, strings.Repeat("9", 30), strings.Repeat("9", 30)},
		{"number extra zero decimals", Number, nil, "1.00000000000000", "1"},
		{"number decimals pad", Number, dec2, "1", "1.00"},
		{"number decimals pad fraction", Number, dec2, "1.5", "1.50"},
		{"number decimals exact", Number, dec2, "-3.14", "-3.14"},
		{"number decimals trailing zero ok", Number, dec2, "1.500", "1.50"},
		{"number decimals zero", Number, dec2, "-0", "0.00"},
		{"number decimals 0", Number, dec0, "12.0", "12"},
		{"number min bound", Number, pct0to100, "0", "0.00"},
		{"number max bound", Number, pct0to100, "100", "100.00"},
		{"number in range", Number, pct0to100, "99.99", "99.99"},
		{"number negative min", Number, &Options{Min: sp("-5.5")}, "-5.5", "-5.5"},

		{"integer zero", Integer, nil, "0", "0"},
		{"integer minus zero", Integer, nil, "-0", "0"},
		{"integer leading zeros", Integer, nil, "00042", "42"},
		{"integer negative leading zeros", Integer, nil, "-000123", "-123"},
		{"integer max", Integer, nil, "9223372036854775807", "9223372036854775807"},
		{"integer min", Integer, nil, "-9223372036854775808", "-9223372036854775808"},

		{"currency EUR pads", Currency, eur, "12", "12.00"},
		{"currency EUR negative", Currency, eur, "-20.5", "-20.50"},
		{"currency JPY", Currency, jpy, "1500", "1500"},
		{"currency JPY point zero", Currency, jpy, "1500.0", "1500"},
		{"currency KWD", Currency, kwd, "1.5", "1.500"},
		{"currency decimals override", Currency, &Options{Currency: sp("EUR"), Decimals: ip(4)}, "1.2345", "1.2345"},
		{"currency XAU with decimals", Currency, &Options{Currency: sp("XAU"), Decimals: ip(3)}, "1.5", "1.500"},

		{"percentage", Percentage, nil, "12.5", "12.5"},
		{"percentage above 100", Percentage, nil, "105.50", "105.5"},
		{"percentage negative", Percentage, nil, "-30", "-30"},
		{"percentage small", Percentage, nil, "0.0001", "0.0001"},
		{"percentage decimals pads", Percentage, &Options{Decimals: ip(2)}, "12.5", "12.50"},

		{"boolean true", Boolean, nil, "true", "true"},
		{"boolean false", Boolean, nil, "false", "false"},

		{"date leap day", Date, nil, "2024-02-29", "2024-02-29"},
		{"date first", Date, nil, "0001-01-01", "0001-01-01"},
		{"date last", Date, nil, "9999-12-31", "9999-12-31"},

		{"select", Select, yesNo, "No", "No"},
		{"select with slash", Select, yesNo, "N/A", "N/A"},

		{"table empty", Table, tableCols, "[]", "[]"},
		{"table empty spaced", Table, tableCols, " [ ]\n", "[]"},
		{"table fills nulls", Table, tableCols, `[{"name":"A","amount":"1.5"}]`,
			"[" + row(map[string]string{"name": `"A"`, "amount": `"1.50"`}) + "]"},
		{"table column order", Table, tableCols, `[{"kind":"b","name":"A"}]`,
			"[" + row(map[string]string{"name": `"A"`, "kind": `"b"`}) + "]"},
		{"table json numbers and bools", Table, tableCols, `[{"amount": 1.5, "qty": 7, "ok": true, "cur": -0, "pct": 12.50}]`,
			"[" + row(map[string]string{"amount": `"1.50"`, "qty": `"7"`, "ok": `"true"`, "cur": `"0.00"`, "pct": `"12.5"`}) + "]"},
		{"table strings for every type", Table, tableCols,
			`[{"name":"x","amount":"2","qty":"-3","ok":"false","on":"2024-01-31","cur":"9.9","pct":"0.5","kind":"a"}]`,
			"[" + row(map[string]string{"name": `"x"`, "amount": `"2.00"`, "qty": `"-3"`, "ok": `"false"`, "on": `"2024-01-31"`,
				"cur": `"9.90"`, "pct": `"0.5"`, "kind": `"a"`}) + "]"},
		{"table nulls and empty text", Table, tableCols, `[{"name":"","amount":null},{}]`,
			"[" + row(map[string]string{"name": `""`}) + "," + row(nil) + "]"},
		{"table escaping", Table, tableCols, `[{"name":"<a&b> \"q\" \\ \u00e9 \u2028 \t"}]`,
			"[" + row(map[string]string{"name": `"<a&b> \"q\" \\ é \u2028 \t"`}) + "]"},
		{"table escaped key", Table, tableCols, `[{"\u006eame":"A"}]`,
			"[" + row(map[string]string{"name": `"A"`}) + "]"},
	}
}

func TestNormalizeValid(t *testing.T) {
	for _, tc := range validCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Normalize(tc.t, tc.o, tc.in)
			if err != nil {
				t.Fatalf("Normalize(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
			again, err := Normalize(tc.t, tc.o, got)
			if err != nil || again != got {
				t.Fatalf("not idempotent: Normalize(%q) = %q, %v", got, again, err)
			}
		})
	}
}

type invalidCase struct {
	name   string
	t      Type
	o      *Options
	in     string
	reason string // substring of the message
	path   string // ValueError.Path
}

func invalidCases() []invalidCase {
	tooManyRows := "[" + strings.Repeat("{},", MaxTableRows) + "{}]"
	bigText := `[{"name":"` + strings.Repeat("a", MaxTableBytes) + `"}]`
	return []invalidCase{
		{"text invalid utf8", Text, nil, "a\xffb", "UTF-8", ""},
		{"text NUL", Text, nil, "a\x00b", "control", ""},
		{"text escape", Text, nil, "\x1b[31m", "control", ""},
		{"text DEL", Text, nil, "a\x7f", "control", ""},
		{"text C1", Text, nil, "a\u0085", "control", ""},
		{"text max_length", Text, &Options{MaxLength: ip(5)}, "héllo!", "at most 5 characters", ""},
		{"text default max", Text, nil, strings.Repeat("a", MaxTextLength+1), "at most 10000 characters", ""},

		{"number empty", Number, nil, "", "not empty", ""},
		{"number leading space", Number, nil, " 1", "decimal number", ""},
		{"number trailing space", Number, nil, "1 ", "decimal number", ""},
		{"number plus", Number, nil, "+1", "decimal number", ""},
		{"number exponent", Number, nil, "1e3", "decimal number", ""},
		{"number exponent upper", Number, nil, "1E3", "decimal number", ""},
		{"number NaN", Number, nil, "NaN", "decimal number", ""},
		{"number Inf", Number, nil, "Inf", "decimal number", ""},
		{"number minus Inf", Number, nil, "-Inf", "decimal number", ""},
		{"number bare fraction", Number, nil, ".5", "decimal number", ""},
		{"number bare point", Number, nil, "5.", "decimal number", ""},
		{"number thousands", Number, nil, "1,000", "decimal number", ""},
		{"number underscore", Number, nil, "1_000", "decimal number", ""},
		{"number hex", Number, nil, "0x10", "decimal number", ""},
		{"number double minus", Number, nil, "--1", "decimal number", ""},
		{"number minus only", Number, nil, "-", "decimal number", ""},
		{"number two points", Number, nil, "1.2.3", "decimal number", ""},
		{"number comma decimal", Number, nil, "1,5", "decimal number", ""},
		{"number arabic digits", Number, nil, "١٢", "decimal number", ""},
		{"number too many integer digits", Number, nil, strings.Repeat("9", 31), "at most 30 digits", ""},
		{"number too many decimals", Number, nil, "0.00000000001", "at most 10 decimal places", ""},
		{"number too long", Number, nil, strings.Repeat("0", 101), "at most 100 characters", ""},
		{"number no rounding", Number, dec2, "1.234", "at most 2 decimal places", ""},
		{"number whole", Number, dec0, "1.5", "whole number", ""},
		{"number below min", Number, pct0to100, "-0.01", "at least 0.00", ""},
		{"number above max", Number, pct0to100, "100.01", "at most 100.00", ""},

		{"integer empty", Integer, nil, "", "not empty", ""},
		{"integer fraction", Integer, nil, "1.0", "whole number", ""},
		{"integer plus", Integer, nil, "+1", "whole number", ""},
		{"integer exponent", Integer, nil, "1e3", "whole number", ""},
		{"integer space", Integer, nil, " 1", "whole number", ""},
		{"integer hex", Integer, nil, "0x10", "whole number", ""},
		{"integer underscore", Integer, nil, "1_000", "whole number", ""},
		{"integer minus only", Integer, nil, "-", "whole number", ""},
		{"integer overflow", Integer, nil, "9223372036854775808", "between", ""},
		{"integer underflow", Integer, nil, "-9223372036854775809", "between", ""},
		{"integer too long", Integer, nil, strings.Repeat("0", 101), "at most 100 characters", ""},

		{"currency JPY fraction", Currency, jpy, "1.5", "whole number", ""},
		{"currency EUR no rounding", Currency, eur, "1.234", "at most 2 decimal places", ""},
		{"currency symbol", Currency, eur, "€12", "decimal number", ""},
		{"currency code", Currency, eur, "12 EUR", "decimal number", ""},

		{"percentage sign", Percentage, nil, "12.5%", "decimal number", ""},
		{"percentage exponent", Percentage, nil, "1e2", "decimal number", ""},
		{"percentage too precise", Percentage, &Options{Decimals: ip(2)}, "12.505", "decimal", ""},

		{"boolean upper", Boolean, nil, "TRUE", `"true" or "false"`, ""},
		{"boolean title", Boolean, nil, "True", `"true" or "false"`, ""},
		{"boolean one", Boolean, nil, "1", `"true" or "false"`, ""},
		{"boolean yes", Boolean, nil, "yes", `"true" or "false"`, ""},
		{"boolean empty", Boolean, nil, "", `"true" or "false"`, ""},
		{"boolean space", Boolean, nil, " true", `"true" or "false"`, ""},

		{"date not leap", Date, nil, "2023-02-29", "exists", ""},
		{"date month 13", Date, nil, "2024-13-01", "exists", ""},
		{"date month 0", Date, nil, "2024-00-10", "", ""},
		{"date day 32", Date, nil, "2024-01-32", "exists", ""},
		{"date short month", Date, nil, "2024-1-01", "YYYY-MM-DD", ""},
		{"date short year", Date, nil, "24-01-01", "YYYY-MM-DD", ""},
		{"date slashes", Date, nil, "2024/01/01", "YYYY-MM-DD", ""},
		{"date time", Date, nil, "2024-01-01T00:00:00Z", "YYYY-MM-DD", ""},
		{"date year zero", Date, nil, "0000-01-01", "0001-01-01", ""},
		{"date space", Date, nil, " 2024-01-1", "YYYY-MM-DD", ""},
		{"date empty", Date, nil, "", "YYYY-MM-DD", ""},

		{"select case", Select, yesNo, "yes", `must be one of "Yes", "No", "N/A"`, ""},
		{"select space", Select, yesNo, "Yes ", `must be one of "Yes", "No", "N/A"`, ""},
		{"select empty", Select, yesNo, "", `must be one of "Yes", "No", "N/A"`, ""},
		{"select other", Select, yesNo, "Maybe", `must be one of "Yes", "No", "N/A"`, ""},
		{"select many choices", Select, &Options{Choices: manyChoices()}, "x", "must be one of the field's 500 choices", ""},

		{"table empty string", Table, tableCols, "", "JSON array", ""},
		{"table object", Table, tableCols, "{}", "JSON array", ""},
		{"table null", Table, tableCols, "null", "JSON array", ""},
		{"table row number", Table, tableCols, "[1]", "JSON object", "[0]"},
		{"table row null", Table, tableCols, "[null]", "JSON object", "[0]"},
		{"table row array", Table, tableCols, "[{},[]]", "JSON object", "[1]"},
		{"table unknown key", Table, tableCols, `[{"bogus":"x"}]`, `unknown column "bogus"`, "[0]"},
		{"table unknown key case", Table, tableCols, `[{"Name":"x"}]`, `unknown column "Name"`, "[0]"},
		{"table duplicate key", Table, tableCols, `[{"name":"a","name":"b"}]`, "twice", "[0].name"},
		{"table duplicate null key", Table, tableCols, `[{"name":null,"name":null}]`, "twice", "[0].name"},
		{"table bad cell", Table, tableCols, `[{},{"amount":"1.234"}]`, "at most 2 decimal places", "[1].amount"},
		{"table exponent number", Table, tableCols, `[{"amount":1e3}]`, "decimal number", "[0].amount"},
		{"table number in text", Table, tableCols, `[{"name":5}]`, "JSON string", "[0].name"},
		{"table number in date", Table, tableCols, `[{"on":20240101}]`, "JSON string", "[0].on"},
		{"table bool in text", Table, tableCols, `[{"name":true}]`, "JSON string", "[0].name"},
		{"table bool string wrong", Table, tableCols, `[{"ok":"yes"}]`, `"true" or "false"`, "[0].ok"},
		{"table number in boolean", Table, tableCols, `[{"ok":1}]`, "JSON string", "[0].ok"},
		{"table empty string number", Table, tableCols, `[{"qty":""}]`, "use null", "[0].qty"},
		{"table nested object", Table, tableCols, `[{"name":{"a":1}}]`, "not a JSON object or array", "[0].name"},
		{"table nested array", Table, tableCols, `[{"name":["a"]}]`, "not a JSON object or array", "[0].name"},
		{"table select invalid", Table, tableCols, `[{"kind":"c"}]`, `must be one of "a", "b"`, "[0].kind"},
		{"table trailing value", Table, tableCols, "[] []", "nothing after", ""},
		{"table trailing garbage", Table, tableCols, "[]x", "nothing after", ""},
		{"table truncated", Table, tableCols, `[{"name":"a"}`, "not valid JSON", ""},
		{"table trailing comma", Table, tableCols, `[{"name":"a"},]`, "", "[1]"},
		{"table JSON leading zero", Table, tableCols, `[{"qty":07}]`, "not valid JSON", "[0]"},
		{"table missing colon", Table, tableCols, `[{"name" "a"}]`, "not valid JSON", "[0].name"},
		{"table invalid utf8", Table, tableCols, "[{\"name\":\"\xff\"}]", "UTF-8", ""},
		{"table text control", Table, tableCols, `[{"name":"a\u0000b"}]`, "control", "[0].name"},
		{"table too many rows", Table, tableCols, tooManyRows, "at most 1000 rows", ""},
		{"table too large", Table, tableCols, bigText, "bytes long", ""},
	}
}

func TestNormalizeInvalid(t *testing.T) {
	for _, tc := range invalidCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Normalize(tc.t, tc.o, tc.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %q, want an error", excerpt(tc.in), got)
			}
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T %v, want *ValueError", err, err)
			}
			if !strings.Contains(ve.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", ve.Reason, tc.reason)
			}
			if ve.Path != tc.path {
				t.Errorf("path %q, want %q", ve.Path, tc.path)
			}
			if got != "" {
				t.Errorf("returned %q alongside the error", got)
			}
			if len(ve.Error()) > 400 {
				t.Errorf("message is %d bytes long", len(ve.Error()))
			}
		})
	}
}

func excerpt(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

func TestValueErrorMessage(t *testing.T) {
	_, err := Normalize(Table, tableCols, `[{},{"amount":"x"}]`)
	want := "[1].amount: " + reasonDecimalSyntax
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	var ve *ValueError
	if errors.As(err, &ve); ve.Type != Number {
		t.Errorf("Type = %q, want the column's type", ve.Type)
	}
	// An unknown key is quoted, and shortened when long.
	_, err = Normalize(Table, tableCols, `[{"`+strings.Repeat("k", 500)+`":1}]`)
	if err == nil || len(err.Error()) > 100 {
		t.Fatalf("unknown-key message not shortened: %v", err)
	}
}

// The size limit applies to the canonical form too: 1000 empty rows are a
// few kilobytes in, but several megabytes once every column is listed.
func TestTableCanonicalSizeLimit(t *testing.T) {
	cols := make([]Column, MaxColumns)
	for i := range cols {
		k := string(rune('a'+i%26)) + string(rune('a'+i/26)) + strings.Repeat("x", 61)
		cols[i] = Column{Key: k, Name: k, Type: Text}
	}
	o := &Options{Columns: cols}
	if errs := ValidateOptions(Table, o); errs != nil {
		t.Fatal(errs)
	}
	in := "[" + strings.Repeat("{},", MaxTableRows-1) + "{}]"
	_, err := Normalize(Table, o, in)
	if err == nil || !strings.Contains(err.Error(), "once normalized") {
		t.Fatalf("got %v, want the normalized size error", err)
	}
	// A table just under the limit is accepted and stays accepted.
	c, err := Normalize(Table, o, "[{},{}]")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Normalize(Table, o, c); err != nil || again != c {
		t.Fatalf("not idempotent: %v", err)
	}
}

func TestTableCanonicalIsValidJSON(t *testing.T) {
	for _, tc := range validCases() {
		if tc.t != Table {
			continue
		}
		var rows []map[string]*string
		if err := json.Unmarshal([]byte(tc.want), &rows); err != nil {
			t.Errorf("%s: canonical form is not an array of string/null objects: %v", tc.name, err)
		}
	}
}

func TestNormalizeRejectsInvalidDefinition(t *testing.T) {
	for _, tc := range []struct {
		t Type
		o *Options
	}{
		{"float", nil},
		{Currency, nil},
		{Select, nil},
		{Table, nil},
		{Number, &Options{Choices: []string{"a"}}},
	} {
		_, err := Normalize(tc.t, tc.o, "1")
		var oe *OptionsError
		if !errors.As(err, &oe) || len(oe.Fields) == 0 {
			t.Errorf("Normalize(%q, %+v): got %v, want *OptionsError", tc.t, tc.o, err)
		}
		if Example(tc.t, tc.o) != "" || Effective(tc.t, tc.o) != nil {
			t.Errorf("%q: Example/Effective should give zero values for an invalid definition", tc.t)
		}
	}
	_, err := Normalize("float", nil, "1")
	if want := "invalid field definition: type: must be one of text, number, integer, currency, percentage, boolean, date, select, table"; err.Error() != want {
		t.Errorf("got %q", err)
	}
}

func TestTypes(t *testing.T) {
	if len(Types) != 9 {
		t.Fatalf("%d types", len(Types))
	}
	for _, ty := range Types {
		if !ty.Valid() {
			t.Errorf("%q not valid", ty)
		}
		if ty.Scalar() != (ty != Table) {
			t.Errorf("%q: Scalar() = %v", ty, ty.Scalar())
		}
	}
	for _, ty := range []Type{"", "Text", "float", "string", "tables"} {
		if ty.Valid() || ty.Scalar() {
			t.Errorf("%q should be invalid", ty)
		}
	}
}
