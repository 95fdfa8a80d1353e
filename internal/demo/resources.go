package demo

import (
	"fmt"

	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/money"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
)

func ptr[T any](v T) *T { return &v }

// Demo templates: one exercising every kind of source, a table and
// external fields (what the fetch flow and the reference integration work
// on), and a simple one.
var demoTemplates = []templates.Input{
	{Name: "Credit review", Fields: []templates.FieldInput{
		{Key: "company_name", Name: "Company name", Type: fieldtype.Text, Source: templates.SourceClientCompanyName},
		{Key: "org_number", Name: "Organization number", Type: fieldtype.Text, Source: templates.SourceClientOrgNumber},
		{Key: "credit_limit", Name: "Credit limit", Type: fieldtype.Currency, Source: templates.SourceClientCreditLimit,
			Options: &fieldtype.Options{Currency: ptr("NOK")}},
		{Key: "review_date", Name: "Review date", Type: fieldtype.Date, Source: templates.SourceActCreatedAt},
		{Key: "equity_ratio", Name: "Equity ratio", Type: fieldtype.Percentage, Source: templates.SourceExternalData},
		{Key: "revenue", Name: "Revenue", Type: fieldtype.Currency, Source: templates.SourceExternalData,
			Options: &fieldtype.Options{Currency: ptr("NOK")}},
		{Key: "rating", Name: "Rating", Type: fieldtype.Select, Source: templates.SourceExternalData,
			Options: &fieldtype.Options{Choices: []string{"AAA", "AA", "A", "BBB", "BB", "B", "CCC"}}},
		{Key: "key_figures", Name: "Key figures", Type: fieldtype.Table, Source: templates.SourceExternalData,
			Options: &fieldtype.Options{Columns: []fieldtype.Column{
				{Key: "year", Name: "Year", Type: fieldtype.Integer},
				{Key: "revenue", Name: "Revenue", Type: fieldtype.Currency, Options: &fieldtype.Options{Currency: ptr("NOK")}},
				{Key: "ebitda", Name: "EBITDA", Type: fieldtype.Currency, Options: &fieldtype.Options{Currency: ptr("NOK")}},
				{Key: "equity_ratio", Name: "Equity ratio", Type: fieldtype.Percentage},
			}}},
		{Key: "analyst_comment", Name: "Analyst comment", Type: fieldtype.Text, Source: templates.SourceManual,
			Options: &fieldtype.Options{MaxLength: ptr(2000)}},
	}},
	{Name: "KYC check", Fields: []templates.FieldInput{
		{Key: "company_name", Name: "Company name", Type: fieldtype.Text, Source: templates.SourceClientCompanyName},
		{Key: "country", Name: "Country", Type: fieldtype.Text, Source: templates.SourceClientCountry},
		{Key: "sanctions_hit", Name: "Sanctions list hit", Type: fieldtype.Boolean, Source: templates.SourceExternalData},
		{Key: "screened_on", Name: "Screened on", Type: fieldtype.Date, Source: templates.SourceExternalData},
		{Key: "risk_level", Name: "Risk level", Type: fieldtype.Select, Source: templates.SourceManual,
			Options: &fieldtype.Options{Choices: []string{"low", "medium", "high"}}},
		{Key: "notes", Name: "Notes", Type: fieldtype.Text, Source: templates.SourceManual},
	}},
}

var demoClients = []clients.Input{
	{CompanyName: "Nordic Timber AS", OrgNumber: "923456781", Country: "NO", CreditLimit: money.MustParse("250000.00")},
	{CompanyName: "Fjord Shipping ASA", OrgNumber: "987654321", Country: "NO", CreditLimit: money.MustParse("1500000.00")},
	{CompanyName: "Baltic Grain AB", OrgNumber: "5561234567", Country: "SE", CreditLimit: money.MustParse("420000.50")},
	{CompanyName: "Helsinki Design Oy", OrgNumber: "1234567-8", Country: "FI", CreditLimit: money.MustParse("75000.00")},
	{CompanyName: "Copenhagen Biotech ApS", OrgNumber: "12345678", Country: "DK", CreditLimit: money.MustParse("999999.99")},
}

// seedTemplates creates the demo templates, or on a re-run finds them by
// name (the first version with that name).
func seedTemplates(s *Seeder) error {
	st := s.Stores.Templates
	s.Templates = s.Templates[:0]
	for _, in := range demoTemplates {
		var id int64
		res := tenant.Scope(s.Ctx, s.DB.DB).Model(&templates.Template{}).
			Where("name = ?", in.Name).Order("id").Limit(1).Pluck("id", &id)
		if res.Error != nil {
			return fmt.Errorf("template %q: %w", in.Name, res.Error)
		}
		var (
			t   *templates.Template
			err error
		)
		if res.RowsAffected > 0 {
			t, err = st.Get(s.Ctx, id)
		} else {
			t, err = st.Create(s.Ctx, in)
		}
		if err != nil {
			return fmt.Errorf("template %q: %w", in.Name, err)
		}
		s.Templates = append(s.Templates, t)
	}
	return nil
}

// seedClients creates the demo clients, or on a re-run finds them by
// organization number.
func seedClients(s *Seeder) error {
	st := s.Stores.Clients
	s.Clients = s.Clients[:0]
	for _, in := range demoClients {
		var c clients.Client
		res := tenant.Scope(s.Ctx, s.DB.DB).Where("org_number = ?", in.OrgNumber).Order("id").Limit(1).Find(&c)
		if res.Error != nil {
			return fmt.Errorf("client %q: %w", in.CompanyName, res.Error)
		}
		if res.RowsAffected == 0 {
			created, err := st.Create(s.Ctx, in)
			if err != nil {
				return fmt.Errorf("client %q: %w", in.CompanyName, err)
			}
			c = *created
		}
		s.Clients = append(s.Clients, &c)
	}
	return nil
}
