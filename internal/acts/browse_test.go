package acts_test

import (
	"errors"
	"testing"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// TestBrowseSearchWindow: a search examines at most acts.SearchWindow
// creation numbers per page and says where it stopped; the cursor it
// returns continues below, where the older match is found, and nothing is
// listed twice. Bad input is a field message.
func TestBrowseSearchWindow(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		c := actstest.Client(t, d, ctx, "Acme AB")
		tpl := actstest.Template(t, d, ctx, "T", actstest.F{Key: "note", Type: "text", Source: templates.SourceManual})
		s := acts.NewStore(d, &outbox.Outbox{}, clients.NewStore(d), templates.NewStore(d))
		p := &auth.Principal{UserID: 1, Role: auth.RoleMember}
		needle, err := s.Create(ctx, p, c.ID, tpl.ID, "The needle")
		if err != nil {
			t.Fatal(err)
		}
		hay, err := s.Create(ctx, p, c.ID, tpl.ID, "Hay")
		if err != nil {
			t.Fatal(err)
		}
		// The newest act far above the needle, as after thousands of acts.
		far := needle.Act.Seq + acts.SearchWindow + 1000
		if err := d.Exec("UPDATE acts SET seq = ? WHERE uuid = ?", far, hay.Act.UUID).Error; err != nil {
			t.Fatal(err)
		}
		first, err := s.Browse(ctx, acts.Browse{Query: "NEEDLE"})
		if err != nil {
			t.Fatal(err)
		}
		floor := far + 1 - acts.SearchWindow
		if len(first.Acts) != 0 || first.SearchedDown != floor || first.Next != floor {
			t.Fatalf("first page: %d acts, searched down to %d, next %d; want 0, %d, %d", len(first.Acts), first.SearchedDown, first.Next, floor, floor)
		}
		second, err := s.Browse(ctx, acts.Browse{Query: "NEEDLE", Before: first.Next})
		if err != nil {
			t.Fatal(err)
		}
		if len(second.Acts) != 1 || second.Acts[0].UUID != needle.Act.UUID || second.Next != 0 || second.Acts[0].ClientName != "Acme AB" || second.Acts[0].TemplateName != "T" {
			t.Fatalf("second page: %+v", second)
		}
		// Without a search there is no window: both acts on one page.
		all, err := s.Browse(ctx, acts.Browse{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Acts) != 2 || all.Acts[0].UUID != hay.Act.UUID || all.Next != 0 {
			t.Fatalf("unfiltered: %+v", all)
		}
		bad := acts.Status("open")
		_, err = s.Browse(ctx, acts.Browse{Status: &bad, Limit: 101, Before: -1})
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.Invalid || len(ae.Fields["status"]) != 1 || len(ae.Fields["limit"]) != 1 || len(ae.Fields["before"]) != 1 {
			t.Fatalf("bad input: %v", err)
		}
	})
}
