package fieldtype

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// manyChoices returns MaxChoices distinct choices.
func manyChoices() []string {
	c := make([]string, MaxChoices)
	for i := range c {
		c[i] = "choice " + strconv.Itoa(i)
	}
	return c
}

type optionsCase struct {
	name string
	t    Type
	o    *Options
}

// validOptions are definitions ValidateOptions must accept; Example and
// Effective are checked against every one of them.
func validOptions() []optionsCase {
	return []optionsCase{
		{"text nil", Text, nil},
		{"text empty object", Text, &Options{}},
		{"text max_length 1", Text, &Options{MaxLength: ip(1)}},
		{"text max_length max", Text, &Options{MaxLength: ip(MaxTextLength)}},
		{"number nil", Number, nil},
		{"number decimals 0", Number, dec0},
		{"number decimals 10", Number, &Options{Decimals: ip(10)}},
		{"number range", Number, pct0to100},
		{"number min only", Number, &Options{Min: sp("-5.5")}},
		{"number max only", Number, &Options{Max: sp("007.50")}},
		{"number min equals max", Number, &Options{Decimals: ip(1), Min: sp("2.5"), Max: sp("2.50")}},
		{"number narrow range", Number, &Options{Decimals: ip(2), Min: sp("1300"), Max: sp("1300.01")}},
		{"number range below example", Number, &Options{Min: sp("-10"), Max: sp("-9.5")}},
		{"integer nil", Integer, nil},
		{"integer empty", Integer, &Options{}},
		{"currency EUR", Currency, eur},
		{"currency JPY", Currency, jpy},
		{"currency KWD", Currency, kwd},
		{"currency CLF", Currency, &Options{Currency: sp("CLF")}},
		{"currency decimals 0", Currency, &Options{Currency: sp("EUR"), Decimals: ip(0)}},
		{"currency XAU decimals", Currency, &Options{Currency: sp("XAU"), Decimals: ip(4)}},
		{"percentage nil", Percentage, nil},
		{"percentage decimals", Percentage, &Options{Decimals: ip(2)}},
		{"boolean nil", Boolean, nil},
		{"date nil", Date, nil},
		{"select", Select, yesNo},
		{"select one", Select, &Options{Choices: []string{"Only"}}},
		{"select many", Select, &Options{Choices: manyChoices()}},
		{"select unicode", Select, &Options{Choices: []string{"Ja", "Nej", "Vet ej – okänt"}}},
		{"table", Table, tableCols},
		{"table one column", Table, &Options{Columns: []Column{{Key: "a", Name: "A", Type: Text}}}},
		{"table column with max_length", Table, &Options{Columns: []Column{
			{Key: "note_1", Name: "Note", Type: Text, Options: &Options{MaxLength: ip(3)}},
			{Key: "gold", Name: "Gold", Type: Currency, Options: &Options{Currency: sp("XAU"), Decimals: ip(2)}},
			{Key: "n", Name: "N", Type: Number, Options: &Options{Min: sp("10000")}},
		}}},
	}
}

func TestValidateOptionsValid(t *testing.T) {
	for _, tc := range validOptions() {
		t.Run(tc.name, func(t *testing.T) {
			if errs := ValidateOptions(tc.t, tc.o); errs != nil {
				t.Fatalf("unexpected errors %v", errs)
			}
		})
	}
}

func TestValidateOptionsInvalid(t *testing.T) {
	col := func(c Column) *Options { return &Options{Columns: []Column{c}} }
	longChoice := strings.Repeat("x", MaxChoiceLength+1)
	tooManyChoices := make([]string, MaxChoices+1)
	for i := range tooManyChoices {
		tooManyChoices[i] = strconv.Itoa(i)
	}
	tooManyCols := make([]Column, MaxColumns+1)
	for i := range tooManyCols {
		tooManyCols[i] = Column{Key: "c" + strconv.Itoa(i), Name: "C", Type: Text}
	}
	for _, tc := range []struct {
		name string
		t    Type
		o    *Options
		key  string // a key that must be present
		msg  string // substring of one of its messages
	}{
		{"unknown type", "float", nil, "type", "must be one of"},
		{"empty type", "", nil, "type", "must be one of"},
		{"type case", "Text", nil, "type", "must be one of"},

		{"text max_length 0", Text, &Options{MaxLength: ip(0)}, "options.max_length", "between 1 and 10000"},
		{"text max_length too big", Text, &Options{MaxLength: ip(MaxTextLength + 1)}, "options.max_length", "between 1 and 10000"},
		{"text choices", Text, &Options{Choices: []string{"a"}}, "options.choices", "not allowed for type text"},
		{"text decimals", Text, &Options{Decimals: ip(2)}, "options.decimals", "not allowed"},

		{"number decimals negative", Number, &Options{Decimals: ip(-1)}, "options.decimals", "between 0 and 10"},
		{"number decimals too big", Number, &Options{Decimals: ip(11)}, "options.decimals", "between 0 and 10"},
		{"number min not decimal", Number, &Options{Min: sp("abc")}, "options.min", "decimal number"},
		{"number max exponent", Number, &Options{Max: sp("1e3")}, "options.max", "decimal number"},
		{"number max empty", Number, &Options{Max: sp("")}, "options.max", "not empty"},
		{"number min too precise", Number, &Options{Decimals: ip(2), Min: sp("0.001")}, "options.min", "at most 2 decimal places"},
		{"number max too precise", Number, &Options{Decimals: ip(0), Max: sp("0.5")}, "options.max", "whole number"},
		{"number min above max", Number, &Options{Min: sp("10"), Max: sp("9.99")}, "options.min", "greater than max"},
		{"number currency", Number, &Options{Currency: sp("EUR")}, "options.currency", "not allowed for type number"},
		{"number empty choices", Number, &Options{Choices: []string{}}, "options.choices", "not allowed"},
		{"number max_length", Number, &Options{MaxLength: ip(3)}, "options.max_length", "not allowed"},
		{"number columns", Number, &Options{Columns: []Column{}}, "options.columns", "not allowed"},

		{"integer decimals", Integer, &Options{Decimals: ip(0)}, "options.decimals", "not allowed for type integer"},
		{"integer min", Integer, &Options{Min: sp("0")}, "options.min", "not allowed"},

		{"currency missing", Currency, nil, "options.currency", "required"},
		{"currency empty options", Currency, &Options{}, "options.currency", "required"},
		{"currency lower case", Currency, &Options{Currency: sp("eur")}, "options.currency", "upper case"},
		{"currency four letters", Currency, &Options{Currency: sp("EURO")}, "options.currency", "three-letter"},
		{"currency empty", Currency, &Options{Currency: sp("")}, "options.currency", "three-letter"},
		{"currency unknown", Currency, &Options{Currency: sp("ABC")}, "options.currency", "not an active ISO 4217"},
		{"currency withdrawn", Currency, &Options{Currency: sp("HRK")}, "options.currency", "not an active ISO 4217"},
		{"currency testing code", Currency, &Options{Currency: sp("XTS")}, "options.currency", "not an active ISO 4217"},
		{"currency no minor unit", Currency, &Options{Currency: sp("XAU")}, "options.decimals", "required for XAU"},
		{"currency decimals too big", Currency, &Options{Currency: sp("EUR"), Decimals: ip(11)}, "options.decimals", "between 0 and 10"},
		{"currency min", Currency, &Options{Currency: sp("EUR"), Min: sp("0")}, "options.min", "not allowed for type currency"},

		{"percentage decimals out of range", Percentage, &Options{Decimals: ip(11)}, "options.decimals", ""},
		{"percentage min", Percentage, &Options{Min: sp("0")}, "options.min", "not allowed for type percentage"},
		{"boolean max_length", Boolean, &Options{MaxLength: ip(5)}, "options.max_length", "not allowed for type boolean"},
		{"date choices", Date, &Options{Choices: []string{"2024-01-01"}}, "options.choices", "not allowed for type date"},

		{"select missing", Select, nil, "options.choices", "required for type select"},
		{"select empty", Select, &Options{Choices: []string{}}, "options.choices", "must not be empty"},
		{"select too many", Select, &Options{Choices: tooManyChoices}, "options.choices", "at most 500"},
		{"select duplicate", Select, &Options{Choices: []string{"a", "b", "a"}}, "options.choices[2]", "duplicates choice 0"},
		{"select empty choice", Select, &Options{Choices: []string{""}}, "options.choices[0]", "must not be empty"},
		{"select padded choice", Select, &Options{Choices: []string{"a", " b"}}, "options.choices[1]", "white space"},
		{"select control choice", Select, &Options{Choices: []string{"a\tb"}}, "options.choices[0]", "control"},
		{"select invalid utf8", Select, &Options{Choices: []string{"\xff"}}, "options.choices[0]", "UTF-8"},
		{"select long choice", Select, &Options{Choices: []string{longChoice}}, "options.choices[0]", "at most 200"},
		{"select decimals", Select, &Options{Choices: []string{"a"}, Decimals: ip(1)}, "options.decimals", "not allowed"},

		{"table missing", Table, nil, "options.columns", "required for type table"},
		{"table empty", Table, &Options{Columns: []Column{}}, "options.columns", "must not be empty"},
		{"table too many", Table, &Options{Columns: tooManyCols}, "options.columns", "at most 50"},
		{"table key upper", Table, col(Column{Key: "Bad", Name: "B", Type: Text}), "options.columns[0].key", "must match"},
		{"table key digit", Table, col(Column{Key: "1a", Name: "B", Type: Text}), "options.columns[0].key", "must match"},
		{"table key empty", Table, col(Column{Key: "", Name: "B", Type: Text}), "options.columns[0].key", "must match"},
		{"table key dash", Table, col(Column{Key: "a-b", Name: "B", Type: Text}), "options.columns[0].key", "must match"},
		{"table key too long", Table, col(Column{Key: "a" + strings.Repeat("b", 63), Name: "B", Type: Text}), "options.columns[0].key", "must match"},
		{"table key duplicate", Table, &Options{Columns: []Column{{Key: "a", Name: "A", Type: Text}, {Key: "a", Name: "B", Type: Text}}},
			"options.columns[1].key", "duplicates the key of column 0"},
		{"table name empty", Table, col(Column{Key: "a", Name: "", Type: Text}), "options.columns[0].name", "must not be empty"},
		{"table name newline", Table, col(Column{Key: "a", Name: "A\nB", Type: Text}), "options.columns[0].name", "control"},
		{"table nested table", Table, col(Column{Key: "a", Name: "A", Type: Table, Options: tableCols}), "options.columns[0].type", "cannot be a table"},
		{"table column type unknown", Table, col(Column{Key: "a", Name: "A", Type: "money"}), "options.columns[0].type", "must be one of"},
		{"table column currency missing", Table, col(Column{Key: "a", Name: "A", Type: Currency}), "options.columns[0].options.currency", "required"},
		{"table column select missing", Table, col(Column{Key: "a", Name: "A", Type: Select}), "options.columns[0].options.choices", "required"},
		{"table column choice dup", Table, col(Column{Key: "a", Name: "A", Type: Select, Options: &Options{Choices: []string{"x", "x"}}}),
			"options.columns[0].options.choices[1]", "duplicates"},
		{"table column option not allowed", Table, col(Column{Key: "a", Name: "A", Type: Number, Options: &Options{Choices: []string{"x"}}}),
			"options.columns[0].options.choices", "not allowed for type number"},
		{"table choices", Table, &Options{Columns: tableCols.Columns, Choices: []string{"a"}}, "options.choices", "not allowed for type table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateOptions(tc.t, tc.o)
			msgs, ok := errs[tc.key]
			if !ok {
				t.Fatalf("no error under %q; got %v", tc.key, errs)
			}
			if !strings.Contains(strings.Join(msgs, "|"), tc.msg) {
				t.Fatalf("%q: %v does not mention %q", tc.key, msgs, tc.msg)
			}
		})
	}
}

// Every error is reported, not just the first, so that a template author
// can fix a form in one go.
func TestValidateOptionsReportsAll(t *testing.T) {
	errs := ValidateOptions(Table, &Options{Columns: []Column{
		{Key: "A", Name: "", Type: Currency},
		{Key: "b", Name: "B", Type: Number, Options: &Options{Decimals: ip(12), Min: sp("x")}},
	}})
	for _, k := range []string{
		"options.columns[0].key", "options.columns[0].name", "options.columns[0].options.currency",
		"options.columns[1].options.decimals", "options.columns[1].options.min",
	} {
		if _, ok := errs[k]; !ok {
			t.Errorf("missing %q in %v", k, errs)
		}
	}
}

func TestOptionsJSON(t *testing.T) {
	t.Run("min and max as numbers or strings", func(t *testing.T) {
		var o Options
		if err := json.Unmarshal([]byte(`{"decimals":2,"min":0.1,"max":"12345678901234567890.12"}`), &o); err != nil {
			t.Fatal(err)
		}
		// 0.1 stays the literal "0.1": it never went through float64.
		if *o.Min != "0.1" || *o.Max != "12345678901234567890.12" || *o.Decimals != 2 {
			t.Fatalf("got %+v", o)
		}
		if errs := ValidateOptions(Number, &o); errs != nil {
			t.Fatal(errs)
		}
		if got := *Effective(Number, &o).Min; got != "0.10" {
			t.Fatalf("effective min %q", got)
		}
	})
	t.Run("number literal kept for validation", func(t *testing.T) {
		var o Options
		if err := json.Unmarshal([]byte(`{"min":1e3}`), &o); err != nil {
			t.Fatal(err)
		}
		if *o.Min != "1e3" {
			t.Fatalf("min %q", *o.Min)
		}
		if errs := ValidateOptions(Number, &o); errs["options.min"] == nil {
			t.Fatalf("1e3 accepted: %v", errs)
		}
	})
	for _, bad := range []string{
		`{"maxLength":5}`,
		`{"min":true}`,
		`{"max":[1]}`,
		`{"decimals":"2"}`,
		`{"decimals":2.5}`,
		`{"choices":"a"}`,
		`{"columns":[{"key":"a","name":"A","type":"text","width":3}]}`,
		`{"columns":[{"key":"a","name":"A","type":"text","options":{"bogus":1}}]}`,
		`[]`,
	} {
		var o Options
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("%s: accepted as %+v", bad, o)
		}
	}
	t.Run("null", func(t *testing.T) {
		var f struct {
			Options *Options `json:"options"`
		}
		if err := json.Unmarshal([]byte(`{"options":null}`), &f); err != nil || f.Options != nil {
			t.Fatalf("%v %+v", err, f.Options)
		}
		min := "x"
		o := Options{Min: &min}
		if err := o.UnmarshalJSON([]byte(" null ")); err != nil || o.Min != &min {
			t.Fatal("null should leave options untouched")
		}
	})
	t.Run("round trip", func(t *testing.T) {
		for _, tc := range validOptions() {
			if tc.o == nil {
				continue
			}
			b, err := json.Marshal(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			var back Options
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s: %s: %v", tc.name, b, err)
			}
			if !reflect.DeepEqual(&back, tc.o) {
				t.Errorf("%s: %s decoded as %+v", tc.name, b, back)
			}
		}
	})
	t.Run("wire shape", func(t *testing.T) {
		b, _ := json.Marshal(Effective(Table, &Options{Columns: []Column{
			{Key: "a", Name: "A", Type: Currency, Options: jpy},
			{Key: "b", Name: "B", Type: Boolean},
		}}))
		want := `{"columns":[{"key":"a","name":"A","type":"currency","options":{"currency":"JPY","decimals":0}},{"key":"b","name":"B","type":"boolean"}]}`
		if string(b) != want {
			t.Fatalf("got  %s\nwant %s", b, want)
		}
	})
}

func TestEffective(t *testing.T) {
	for _, tc := range []struct {
		t    Type
		o    *Options
		want *Options
	}{
		{Text, nil, &Options{MaxLength: ip(MaxTextLength)}},
		{Text, &Options{MaxLength: ip(20)}, &Options{MaxLength: ip(20)}},
		{Number, nil, nil},
		{Number, &Options{}, nil},
		{Number, &Options{Decimals: ip(2), Min: sp("-0"), Max: sp("0100.5")}, &Options{Decimals: ip(2), Min: sp("0.00"), Max: sp("100.50")}},
		{Number, &Options{Max: sp("1.50")}, &Options{Max: sp("1.5")}},
		{Integer, nil, nil},
		{Integer, &Options{}, nil},
		{Currency, eur, &Options{Currency: sp("EUR"), Decimals: ip(2)}},
		{Currency, jpy, &Options{Currency: sp("JPY"), Decimals: ip(0)}},
		{Currency, kwd, &Options{Currency: sp("KWD"), Decimals: ip(3)}},
		{Currency, &Options{Currency: sp("CLF")}, &Options{Currency: sp("CLF"), Decimals: ip(4)}},
		{Currency, &Options{Currency: sp("JPY"), Decimals: ip(2)}, &Options{Currency: sp("JPY"), Decimals: ip(2)}},
		{Percentage, nil, nil},
		{Boolean, nil, nil},
		{Date, nil, nil},
		{Select, yesNo, yesNo},
		{Table, &Options{Columns: []Column{
			{Key: "a", Name: "A", Type: Text},
			{Key: "b", Name: "B", Type: Currency, Options: eur},
			{Key: "c", Name: "C", Type: Integer, Options: &Options{}},
		}}, &Options{Columns: []Column{
			{Key: "a", Name: "A", Type: Text, Options: &Options{MaxLength: ip(MaxTextLength)}},
			{Key: "b", Name: "B", Type: Currency, Options: &Options{Currency: sp("EUR"), Decimals: ip(2)}},
			{Key: "c", Name: "C", Type: Integer},
		}}},
	} {
		got := Effective(tc.t, tc.o)
		if !reflect.DeepEqual(got, tc.want) {
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tc.want)
			t.Errorf("Effective(%s, …) = %s, want %s", tc.t, gb, wb)
		}
	}
}

// Effective options are a fixed point, shares no memory with the input, and
// describe the same field: every value gets the same verdict and canonical
// form under both.
func TestEffectiveEquivalent(t *testing.T) {
	var values []string
	for _, vc := range validCases() {
		values = append(values, vc.in, vc.want)
	}
	for _, ic := range invalidCases() {
		if len(ic.in) < 1000 {
			values = append(values, ic.in)
		}
	}
	for _, tc := range validOptions() {
		eff := Effective(tc.t, tc.o)
		if errs := ValidateOptions(tc.t, eff); errs != nil {
			t.Errorf("%s: effective options invalid: %v", tc.name, errs)
			continue
		}
		if again := Effective(tc.t, eff); !reflect.DeepEqual(again, eff) {
			t.Errorf("%s: Effective is not a fixed point", tc.name)
		}
		for _, v := range values {
			c1, err1 := Normalize(tc.t, tc.o, v)
			c2, err2 := Normalize(tc.t, eff, v)
			if c1 != c2 || (err1 == nil) != (err2 == nil) {
				t.Errorf("%s: %q: %q/%v under options, %q/%v under effective options", tc.name, v, c1, err1, c2, err2)
			}
		}
	}
	// No aliasing: changing the result leaves the input alone.
	in := &Options{Choices: []string{"a", "b"}}
	out := Effective(Select, in)
	out.Choices[0] = "changed"
	if in.Choices[0] != "a" {
		t.Fatal("Effective aliases choices")
	}
	tin := &Options{Columns: []Column{{Key: "a", Name: "A", Type: Text, Options: &Options{MaxLength: ip(3)}}}}
	tout := Effective(Table, tin)
	*tout.Columns[0].Options.MaxLength = 99
	tout.Columns[0].Name = "changed"
	if *tin.Columns[0].Options.MaxLength != 3 || tin.Columns[0].Name != "A" {
		t.Fatal("Effective aliases columns")
	}
}

func TestExample(t *testing.T) {
	for _, tc := range validOptions() {
		t.Run(tc.name, func(t *testing.T) {
			ex := Example(tc.t, tc.o)
			if ex == "" {
				t.Fatal("empty example")
			}
			c, err := Normalize(tc.t, tc.o, ex)
			if err != nil {
				t.Fatalf("Example %q is invalid: %v", ex, err)
			}
			if c != ex {
				t.Fatalf("Example %q is not canonical (%q)", ex, c)
			}
		})
	}
	for _, tc := range []struct {
		t    Type
		o    *Options
		want string
	}{
		{Text, &Options{MaxLength: ip(3)}, "Sam"},
		{Number, nil, "1234.5"},
		{Number, dec0, "1234"},
		{Number, &Options{Decimals: ip(3), Max: sp("100")}, "100.000"},
		{Number, &Options{Min: sp("5000")}, "5000"},
		{Currency, eur, "1234.50"},
		{Currency, jpy, "1234"},
		{Integer, nil, "42"},
		{Date, nil, "2024-12-31"},
		{Select, yesNo, "Yes"},
		{Table, &Options{Columns: []Column{{Key: "a", Name: "A", Type: Boolean}, {Key: "b", Name: "B", Type: Percentage}}},
			`[{"a":"true","b":"12.5"},{"a":"true","b":"12.5"}]`},
	} {
		if got := Example(tc.t, tc.o); got != tc.want {
			t.Errorf("Example(%s) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestISO4217Table(t *testing.T) {
	if n := len(iso4217); n < 150 || n > 200 {
		t.Fatalf("%d codes; the active list has about 175", n)
	}
	for code, unit := range iso4217 {
		if !isUpperCode(code) {
			t.Errorf("%q is not three upper-case letters", code)
		}
		if unit != noMinorUnit && (unit < 0 || unit > MaxDecimals) {
			t.Errorf("%s: minor unit %d", code, unit)
		}
	}
	for code, want := range map[string]int{
		"USD": 2, "EUR": 2, "SEK": 2, "GBP": 2, "JPY": 0, "KRW": 0, "ISK": 0, "CLP": 0, "VND": 0,
		"BHD": 3, "KWD": 3, "TND": 3, "CLF": 4, "UYW": 4, "XAU": noMinorUnit, "XDR": noMinorUnit,
	} {
		if got, ok := iso4217[code]; !ok || got != want {
			t.Errorf("%s: minor unit %d (known %v), want %d", code, got, ok, want)
		}
	}
}
