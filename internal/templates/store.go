package templates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Id sequences (per tenant).
const (
	Sequence      = "templates"
	FieldSequence = "template_fields"
)

// Store reads and writes the templates of the tenant in the context. Every
// query goes through tenant.Scope.
type Store struct{ db *db.DB }

// NewStore returns a Store over d.
func NewStore(d *db.DB) *Store { return &Store{db: d} }

// Get returns template id with its fields in display order and InUse set,
// or apperr.NotFound (also for another tenant's template).
func (s *Store) Get(ctx context.Context, id int64) (*Template, error) {
	return s.get(ctx, s.db.DB, false, id)
}

// GetTx is Get inside the caller's transaction tx, which is about to
// create an act from the template: on PostgreSQL it takes a FOR SHARE lock
// on the template row, so that a concurrent PUT (which takes FOR UPDATE)
// can neither change the fields between this read and the act insert nor
// miss the new act when it decides between changing in place and creating
// a version. On SQLite the transaction already holds the database write
// lock.
func (s *Store) GetTx(ctx context.Context, tx *gorm.DB, id int64) (*Template, error) {
	return s.get(ctx, tx, s.db.Dialect == db.Postgres, id)
}

func (s *Store) get(ctx context.Context, q *gorm.DB, lock bool, id int64) (*Template, error) {
	tq := tenant.Scope(ctx, q)
	if lock {
		tq = tq.Clauses(clause.Locking{Strength: clause.LockingStrengthShare})
	}
	t, err := s.take(tq, id)
	if err != nil {
		return nil, err
	}
	if err := s.loadFields(ctx, q, []*Template{t}); err != nil {
		return nil, err
	}
	return t, nil
}

func (s *Store) take(q *gorm.DB, id int64) (*Template, error) {
	var t Template
	err := q.Where("id = ?", id).Take(&t).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, apperr.E(apperr.NotFound, "template not found")
	case err != nil:
		return nil, fmt.Errorf("templates.Get(%d): %w", id, err)
	}
	return &t, nil
}

// loadFields fills Fields and InUse of ts with two queries in all: the
// fields of every template in one, the in-use flags in another.
func (s *Store) loadFields(ctx context.Context, q *gorm.DB, ts []*Template) error {
	if len(ts) == 0 {
		return nil
	}
	ids := make([]int64, len(ts))
	byID := make(map[int64]*Template, len(ts))
	for i, t := range ts {
		ids[i], byID[t.ID] = t.ID, t
		t.Fields = []Field{}
	}
	var fields []Field
	err := tenant.Scope(ctx, q).Where("template_id IN ?", ids).Order("template_id, position").Find(&fields).Error
	if err != nil {
		return fmt.Errorf("templates: load fields: %w", err)
	}
	for _, f := range fields {
		t := byID[f.TemplateID]
		t.Fields = append(t.Fields, f)
	}
	used, err := s.inUse(ctx, q, ids)
	if err != nil {
		return err
	}
	for _, t := range ts {
		t.InUse = used[t.ID]
	}
	return nil
}

// inUse reports which of ids some act references.
func (s *Store) inUse(ctx context.Context, q *gorm.DB, ids []int64) (map[int64]bool, error) {
	var used []int64
	err := tenant.Scope(ctx, q).Table("acts").Distinct("template_id").Where("template_id IN ?", ids).Pluck("template_id", &used).Error
	if err != nil {
		return nil, fmt.Errorf("templates: in use: %w", err)
	}
	m := make(map[int64]bool, len(used))
	for _, id := range used {
		m[id] = true
	}
	return m, nil
}

// Filter narrows List.
type Filter struct {
	// UpdatedSince keeps the templates changed strictly after it and
	// orders them by (updated_at, id), oldest change first (db.Stamp).
	UpdatedSince *time.Time
}

// List returns one page of templates (every version) ordered by id, with
// their fields, and the total: a constant four queries (count, page, the
// page's fields, the page's in-use flags), never one per template. With
// UpdatedSince the total counts the templates changed since over
// templates_updated_idx.
func (s *Store) List(ctx context.Context, f Filter, p page.Request) (_ []Template, total int64, err error) {
	defer apperr.Wrap(&err, "templates.List(page %d, limit %d)", p.Page, p.Limit)
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	var since *gorm.DB
	if f.UpdatedSince != nil {
		since = tenant.Scope(ctx, s.db.DB.Model(&Template{})).Where("updated_at > ?", f.UpdatedSince.UTC().Truncate(time.Microsecond))
		err = since.Session(&gorm.Session{}).Count(&total).Error
	} else {
		total, err = counts.Total(ctx, s.db.DB, counts.Templates)
	}
	if err != nil {
		return nil, 0, err
	}
	out := []Template{}
	if p.Beyond(total) {
		return out, total, nil
	}
	if since != nil {
		keys := since.Select("id").Order("updated_at, id").Limit(p.Limit).Offset(p.Offset())
		err = tenant.Scope(ctx, s.db.DB).Where("id IN (?)", keys).Order("updated_at, id").Find(&out).Error
	} else {
		from, skip, ok, serr := counts.Seek(ctx, s.db.DB, counts.Templates.Kind, int64(p.Offset()), total)
		if serr != nil || !ok {
			return out, total, serr
		}
		err = tenant.Scope(ctx, s.db.DB).Where("id >= ?", from).Order("id").Limit(p.Limit).Offset(int(skip)).Find(&out).Error
	}
	if err != nil {
		return nil, 0, err
	}
	ptrs := make([]*Template, len(out))
	for i := range out {
		ptrs[i] = &out[i]
	}
	if err := s.loadFields(ctx, s.db.DB, ptrs); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// Create validates in and stores it as version 1 of a new template family.
func (s *Store) Create(ctx context.Context, in Input) (_ *Template, err error) {
	tid := tenant.ID(ctx)
	defer apperr.Wrap(&err, "templates.Create(tenant %d)", tid)
	fields, err := validate(in)
	if err != nil {
		return nil, err
	}
	t := &Template{TenantID: tid, Version: 1, Name: in.Name}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		id, err := db.NextID(tx, tid, Sequence)
		if err != nil {
			return err
		}
		t.ID, t.FamilyID = id, id
		if t.UpdatedAt, err = db.Stamp(tx, tid, Sequence, tx.NowFunc()); err != nil {
			return err
		}
		t.CreatedAt = t.UpdatedAt
		if err := tx.Create(t).Error; err != nil {
			return err
		}
		t.Fields, err = insertFields(tx, tid, t.ID, fields, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Update gives template id the content in. A template no act uses is
// changed in place (created == false; field ids are kept for keys that stay).
// A template in use is immutable: a new version of its family is created
// (created == true) with a new id, version = the family's highest + 1, and
// PreviousVersionID = id. Content identical to the current one changes
// nothing and creates no version.
func (s *Store) Update(ctx context.Context, id int64, in Input) (_ *Template, created bool, err error) {
	tid := tenant.ID(ctx)
	defer apperr.Wrap(&err, "templates.Update(tenant %d, %d)", tid, id)
	fields, err := validate(in)
	if err != nil {
		return nil, false, err
	}
	var out *Template
	same := false
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		// Lock the family's first version, then the target: every writer
		// of a family serializes on the first row (so two new versions
		// never compute the same number), and the target's lock excludes
		// act creation reading it (see Get) until we commit.
		// The unlocked read only learns family_id, which never changes.
		first, err := s.take(tenant.Scope(ctx, tx), id)
		if err != nil {
			return err
		}
		cur, err := s.take(s.db.ForUpdate(tenant.Scope(ctx, tx)), first.FamilyID)
		if err != nil {
			return err
		}
		if first.FamilyID != id {
			if cur, err = s.take(s.db.ForUpdate(tenant.Scope(ctx, tx)), id); err != nil {
				return err
			}
		}
		if err := s.loadFields(ctx, tx, []*Template{cur}); err != nil {
			return err
		}
		if sameContent(cur, in.Name, fields) {
			out, same = cur, true
			return nil
		}
		if !cur.InUse {
			out, err = s.replace(ctx, tx, cur, in.Name, fields)
			return err
		}
		out, err = s.newVersion(ctx, tx, cur, in.Name, fields)
		created = err == nil
		return err
	})
	if err == nil && same {
		// Identical content (a PUT sent again): the answer confirms stored
		// state, perhaps the earlier PUT's own, so it waits until that
		// state is durable.
		err = s.db.WaitDurable(ctx)
	}
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// replace changes an unused template in place.
func (s *Store) replace(ctx context.Context, tx *gorm.DB, cur *Template, name string, fields []field) (*Template, error) {
	keep := make(map[string]int64, len(cur.Fields))
	for _, f := range cur.Fields {
		keep[f.Key] = f.ID
	}
	now, err := db.Stamp(tx, cur.TenantID, Sequence, tx.NowFunc())
	if err != nil {
		return nil, err
	}
	if err := tenant.Scope(ctx, tx).Model(&Template{}).Where("id = ?", cur.ID).
		Updates(map[string]any{"name": name, "updated_at": now}).Error; err != nil {
		return nil, err
	}
	if err := tenant.Scope(ctx, tx).Where("template_id = ?", cur.ID).Delete(&Field{}).Error; err != nil {
		return nil, err
	}
	out := *cur
	out.Name, out.UpdatedAt = name, now
	out.Fields, err = insertFields(tx, cur.TenantID, cur.ID, fields, keep)
	return &out, err
}

// newVersion stores a new version of cur's family.
func (s *Store) newVersion(ctx context.Context, tx *gorm.DB, cur *Template, name string, fields []field) (*Template, error) {
	var top int
	if err := tenant.Scope(ctx, tx).Model(&Template{}).Where("family_id = ?", cur.FamilyID).
		Select("COALESCE(MAX(version), 0)").Scan(&top).Error; err != nil {
		return nil, fmt.Errorf("highest version: %w", err)
	}
	id, err := db.NextID(tx, cur.TenantID, Sequence)
	if err != nil {
		return nil, err
	}
	prev := cur.ID
	t := &Template{
		TenantID: cur.TenantID, ID: id, FamilyID: cur.FamilyID, Version: top + 1,
		PreviousVersionID: &prev, Name: name,
	}
	if t.UpdatedAt, err = db.Stamp(tx, cur.TenantID, Sequence, tx.NowFunc()); err != nil {
		return nil, err
	}
	t.CreatedAt = t.UpdatedAt
	if err := tx.Create(t).Error; err != nil {
		return nil, err
	}
	t.Fields, err = insertFields(tx, cur.TenantID, id, fields, nil)
	return t, err
}

// insertFields stores fields of template templateID in one batch, reusing
// the ids in keep (by key) and allocating the rest in one statement.
func insertFields(tx *gorm.DB, tid, templateID int64, fields []field, keep map[string]int64) ([]Field, error) {
	fresh := 0
	for _, f := range fields {
		if _, ok := keep[f.Key]; !ok {
			fresh++
		}
	}
	var next int64
	if fresh > 0 {
		first, err := db.NextIDs(tx, tid, FieldSequence, fresh)
		if err != nil {
			return nil, err
		}
		next = first
	}
	rows := make([]Field, len(fields))
	for i, f := range fields {
		id, ok := keep[f.Key]
		if !ok {
			id, next = next, next+1
		}
		rows[i] = Field{
			TenantID: tid, ID: id, TemplateID: templateID, Position: i,
			Key: f.Key, Name: f.Name, Type: string(f.Type), Source: f.Source, Options: f.options,
		}
	}
	if err := tx.CreateInBatches(rows, 100).Error; err != nil {
		return nil, fmt.Errorf("insert fields: %w", err)
	}
	return rows, nil
}

// sameContent reports whether t already has exactly this name and fields
// (options compared in their effective form).
func sameContent(t *Template, name string, fields []field) bool {
	if t.Name != name || len(t.Fields) != len(fields) {
		return false
	}
	for i, f := range fields {
		g := t.Fields[i]
		if g.Key != f.Key || g.Name != f.Name || g.Type != string(f.Type) || g.Source != f.Source {
			return false
		}
		if (g.Options == nil) != (f.options == nil) || (g.Options != nil && !sameOptions(*g.Options, *f.options)) {
			return false
		}
	}
	return true
}

// sameOptions compares stored options JSON with fresh JSON by value: the
// stored text may come from an older encoding (property order, spacing).
func sameOptions(stored, fresh string) bool {
	if stored == fresh {
		return true
	}
	var o fieldtype.Options
	if err := json.Unmarshal([]byte(stored), &o); err != nil {
		return false
	}
	b, err := json.Marshal(&o)
	return err == nil && string(b) == fresh
}
