// Package actstest inserts the rows acts and fetch tests need (clients,
// templates, webhook registrations) straight through the models, so those
// tests do not depend on the resources or webhooks handlers.
package actstest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/money"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Client inserts a client of the tenant in ctx.
func Client(t testing.TB, d *db.DB, ctx context.Context, name string) clients.Client {
	t.Helper()
	tid := tenant.ID(ctx)
	id, err := db.NextID(d.DB, tid, "clients")
	if err != nil {
		t.Fatal(err)
	}
	c := clients.Client{
		TenantID: tid, ID: id, CompanyName: name, OrgNumber: fmt.Sprintf("556%07d", id),
		Country: "SE", CreditLimit: money.MustParse("125000.50"),
	}
	if err := d.WithContext(ctx).Create(&c).Error; err != nil {
		t.Fatalf("actstest: create client: %v", err)
	}
	return c
}

// F describes a template field: options are given as fieldtype.Options and
// stored in their effective form, as the templates store does.
type F struct {
	Key, Type string
	Source    templates.Source
	Options   *fieldtype.Options
}

// Template inserts a template (version 1) with fields in the given order.
func Template(t testing.TB, d *db.DB, ctx context.Context, name string, fields ...F) templates.Template {
	t.Helper()
	tid := tenant.ID(ctx)
	id, err := db.NextID(d.DB, tid, "templates")
	if err != nil {
		t.Fatal(err)
	}
	tpl := templates.Template{TenantID: tid, ID: id, FamilyID: id, Version: 1, Name: name}
	if err := d.WithContext(ctx).Create(&tpl).Error; err != nil {
		t.Fatalf("actstest: create template: %v", err)
	}
	if len(fields) == 0 {
		return tpl
	}
	first, err := db.NextIDs(d.DB, tid, "template_fields", len(fields))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range fields {
		if errs := fieldtype.ValidateOptions(fieldtype.Type(f.Type), f.Options); len(errs) > 0 {
			t.Fatalf("actstest: field %s options: %v", f.Key, errs)
		}
		var opts *string
		if eff := fieldtype.Effective(fieldtype.Type(f.Type), f.Options); eff != nil {
			b, err := json.Marshal(eff)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			opts = &s
		}
		tf := templates.Field{
			TenantID: tid, ID: first + int64(i), TemplateID: id, Position: i + 1,
			Key: f.Key, Name: "Field " + f.Key, Type: f.Type, Source: f.Source, Options: opts,
		}
		tpl.Fields = append(tpl.Fields, tf)
	}
	if err := d.WithContext(ctx).Create(&tpl.Fields).Error; err != nil {
		t.Fatalf("actstest: create template fields: %v", err)
	}
	return tpl
}

// Webhook inserts an active registration of event by user (the secret is a
// placeholder: these tests never deliver).
func Webhook(t testing.TB, d *db.DB, ctx context.Context, userID int64, event, target string) int64 {
	t.Helper()
	tid := tenant.ID(ctx)
	id, err := db.NextID(d.DB, tid, "webhooks")
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]any{
		"tenant_id": tid, "id": id, "event": event, "target": target, "active": true,
		"secret_ciphertext": "test-ciphertext", "created_by_user_id": userID,
	}
	if err := d.WithContext(ctx).Table("webhooks").Create(row).Error; err != nil {
		t.Fatalf("actstest: create webhook: %v", err)
	}
	return id
}
