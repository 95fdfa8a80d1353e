package demo

import (
	"fmt"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Demo acts: a draft credit review with some values entered (ready for a
// fetch request), a final one, and a KYC check not yet started.
type demoAct struct {
	client, template int // indexes into Seeder.Clients / Seeder.Templates
	title            string
	values           map[string]string // ordinary edits by the admin
	final            bool
}

var demoActs = []demoAct{
	{client: 0, template: 0, title: "Credit review 2026", values: map[string]string{
		"equity_ratio": "31.5", "analyst_comment": "Stable order book; timber prices recovering.",
	}},
	{client: 1, template: 0, title: "Credit review 2025", final: true, values: map[string]string{
		"revenue": "812000000.00", "rating": "A", "equity_ratio": "42.1",
		"key_figures":     `[{"year":"2024","revenue":"812000000.00","ebitda":"96000000.00","equity_ratio":"42.1"}]`,
		"analyst_comment": "Renewed for one year.",
	}},
	{client: 2, template: 1, title: "KYC check"},
}

// seedActs creates the demo acts once: on a re-run, a tenant that already
// has acts is left alone (the acts may have been changed since).
func seedActs(s *Seeder) error {
	if len(s.Clients) < 3 || len(s.Templates) < 2 {
		return fmt.Errorf("acts: need the demo clients and templates first")
	}
	var n int64
	if err := tenant.Scope(s.Ctx, s.DB.DB.Model(&acts.Act{})).Count(&n).Error; err != nil {
		return fmt.Errorf("acts: %w", err)
	}
	if n > 0 {
		return nil
	}
	p := &auth.Principal{TenantID: s.Tenant.ID, UserID: s.Admin.ID, Role: auth.RoleAdmin, ClientID: "demo",
		Scopes: []string{auth.ScopeActsRead, auth.ScopeActsWrite}}
	ctx := auth.NewContext(s.Ctx, p)
	store := s.Stores.Acts
	for _, da := range demoActs {
		a, err := store.Create(ctx, p, s.Clients[da.client].ID, s.Templates[da.template].ID, da.title)
		if err != nil {
			return fmt.Errorf("act %q: %w", da.title, err)
		}
		if len(da.values) > 0 {
			w := acts.DataWrite{}
			for _, d := range a.Data {
				if v, ok := da.values[d.Key]; ok {
					id, v := d.ID, v
					w.Items = append(w.Items, acts.DataItem{ID: &id, Value: &v})
				}
			}
			if _, err := store.WriteData(ctx, p, a.Act.UUID, w); err != nil {
				return fmt.Errorf("act %q values: %w", da.title, err)
			}
		}
		if da.final {
			if _, err := store.Finalize(ctx, p, a.Act.UUID); err != nil {
				return fmt.Errorf("act %q: %w", da.title, err)
			}
		}
	}
	return nil
}
