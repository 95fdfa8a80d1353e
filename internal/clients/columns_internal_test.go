package clients

import (
	"testing"

	"github.com/finsvc/finsvc/internal/db"
)

// get scans by hand: its column list must cover the model.
func TestClientColumnsCoverTheModel(t *testing.T) {
	if err := db.CheckColumns(&Client{}, clientColumns); err != nil {
		t.Fatal(err)
	}
}
