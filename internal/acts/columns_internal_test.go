package acts

import (
	"testing"

	"github.com/finsvc/finsvc/internal/db"
)

// detail scans data points by hand: the column list must cover the model.
func TestDataPointColumnsCoverTheModel(t *testing.T) {
	if err := db.CheckColumns(&DataPoint{}, dataPointColumns); err != nil {
		t.Fatal(err)
	}
}
