package db

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"gorm.io/gorm/schema"
)

// CheckColumns reports an error unless columns (a comma-separated Select
// list) names every column of model's GORM schema, each once. A hand scan
// (ScanAll, ScanOne) must read every field GORM's would, so that a column
// added to the model later cannot silently read as its zero value; stores
// pin it in a test.
func CheckColumns(model any, columns string) error {
	s, err := schema.Parse(model, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		return err
	}
	var got []string
	for _, c := range strings.Split(columns, ",") {
		got = append(got, strings.TrimSpace(c))
	}
	want := slices.Clone(s.DBNames)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("columns %v, the model %s has %v", got, s.Name, want)
	}
	return nil
}
