package fieldtype_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/finsvc/finsvc/internal/fieldtype"
)

func ExampleNormalize() {
	opts := &fieldtype.Options{Currency: ptr("EUR")} // decimals default to 2
	for _, v := range []string{"1200", "0012.5", "-3.10", "1.234", "1e3"} {
		c, err := fieldtype.Normalize(fieldtype.Currency, opts, v)
		var ve *fieldtype.ValueError
		if errors.As(err, &ve) {
			fmt.Printf("%-7s invalid: %s\n", v, ve.Reason)
			continue
		}
		fmt.Printf("%-7s → %s\n", v, c)
	}
	// Output:
	// 1200    → 1200.00
	// 0012.5  → 12.50
	// -3.10   → -3.10
	// 1.234   invalid: must have at most 2 decimal places
	// 1e3     invalid: must be a decimal number such as 1234.56 or -0.5 (digits with an optional leading "-" and an optional "." followed by digits; no "+", exponent, spaces or separators)
}

func ExampleNormalize_table() {
	var opts fieldtype.Options
	_ = json.Unmarshal([]byte(`{"columns":[
		{"key":"year","name":"Year","type":"integer"},
		{"key":"revenue","name":"Revenue","type":"currency","options":{"currency":"SEK"}},
		{"key":"audited","name":"Audited","type":"boolean"}]}`), &opts)
	c, err := fieldtype.Normalize(fieldtype.Table, &opts, `[
		{"revenue": 1500000, "year": "2023", "audited": true},
		{"year": 2024}]`)
	fmt.Println(c, err)
	_, err = fieldtype.Normalize(fieldtype.Table, &opts, `[{"year": 2024, "profit": "1"}]`)
	fmt.Println(err)
	// Output:
	// [{"year":"2023","revenue":"1500000.00","audited":"true"},{"year":"2024","revenue":null,"audited":null}] <nil>
	// [0]: has unknown column "profit"
}

func ExampleValidateOptions() {
	errs := fieldtype.ValidateOptions(fieldtype.Number, &fieldtype.Options{
		Decimals: ptr(2), Min: ptr("0.001"), Choices: []string{"a"},
	})
	fmt.Println(errs["options.min"])
	fmt.Println(errs["options.choices"])
	// Output:
	// [must have at most 2 decimal places]
	// [is not allowed for type number]
}

func ExampleEffective() {
	eff := fieldtype.Effective(fieldtype.Currency, &fieldtype.Options{Currency: ptr("JPY")})
	b, _ := json.Marshal(eff)
	fmt.Println(string(b))
	// Output:
	// {"currency":"JPY","decimals":0}
}

func ExampleExample() {
	fmt.Println(fieldtype.Example(fieldtype.Number, &fieldtype.Options{Decimals: ptr(3), Max: ptr("100")}))
	fmt.Println(fieldtype.Example(fieldtype.Date, nil))
	// Output:
	// 100.000
	// 2024-12-31
}

func ptr[T any](v T) *T { return &v }
