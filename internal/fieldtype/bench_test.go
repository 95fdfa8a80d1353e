package fieldtype

import (
	"strconv"
	"strings"
	"testing"
)

func BenchmarkNormalizeNumber(b *testing.B) {
	o := &Options{Decimals: ip(2), Min: sp("-1000000"), Max: sp("1000000000")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Normalize(Number, o, "0012345.6"); err != nil {
			b.Fatal(err)
		}
	}
}

// table200 is a 200-row value over tableCols with every cell filled, half
// of the numbers as JSON numbers.
func table200() string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 200 {
		if i > 0 {
			sb.WriteString(",\n")
		}
		n := strconv.Itoa(i)
		amount := `"` + n + `.5"`
		if i%2 == 0 {
			amount = n + ".25"
		}
		sb.WriteString(`{"name":"Row ` + n + ` – Ltd \"quoted\"","amount":` + amount + `,"qty":` + n +
			`,"ok":true,"on":"2024-06-30","cur":"-` + n + `.1","pct":"12.50","kind":"b"}`)
	}
	sb.WriteByte(']')
	return sb.String()
}

func BenchmarkNormalizeTable200(b *testing.B) {
	v := table200()
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Normalize(Table, tableCols, v); err != nil {
			b.Fatal(err)
		}
	}
}
