package acts

import (
	"reflect"
	"testing"
)

// TestAPISharesOptionsByText: rendering an act decodes each distinct options
// text once and gives every data point what APIDataPoint alone gives it.
func TestAPISharesOptionsByText(t *testing.T) {
	str := func(s string) *string { return &s }
	a, b := `{"currency":"NOK"}`, `{"choices":["A","B"]}`
	d := &Detail{Fetch: map[int64]*FetchState{}}
	for i, o := range []*string{str(a), nil, str(b), str(a), str("null"), str(""), str(b), str(a)} {
		d.Data = append(d.Data, DataPoint{ID: int64(i + 1), Key: "k", Type: "text", Source: "manual", Options: o})
	}
	got, err := d.API()
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Data {
		want, err := APIDataPoint(&d.Data[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Data[i], want) {
			t.Fatalf("data point %d: %+v, APIDataPoint gives %+v", i, got.Data[i], want)
		}
	}
	if got.Data[0].Options == nil || got.Data[0].Options.Currency == nil || *got.Data[0].Options.Currency != "NOK" ||
		got.Data[1].Options != nil || got.Data[4].Options != nil || got.Data[5].Options != nil || got.Data[2].Options.Choices == nil || len(*got.Data[2].Options.Choices) != 2 {
		t.Fatalf("options rendered wrong: %+v", got.Data)
	}
	bad := &Detail{Data: []DataPoint{{ID: 1, Options: str(`{"currency":`)}}}
	if _, err := bad.API(); err == nil {
		t.Fatal("undecodable options rendered")
	}
}
