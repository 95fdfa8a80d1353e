package acts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/tombstones"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Store reads and changes acts. Every method expects the tenant in ctx; an
// act of another tenant is apperr.NotFound like a missing one.
type Store struct {
	DB     *db.DB
	Outbox *outbox.Outbox
	// Clients and Templates are the stores an act reads its client and
	// template through (built once by the composition root, never here).
	Clients   *clients.Store
	Templates *templates.Store
	// Window is a fetch request's lifetime, expires_at - requested_at
	// (FINSVC_FETCH_WINDOW); zero means DefaultWindow.
	Window time.Duration
	// Clock is the one clock of the aggregate: every time it stores or
	// compares (expiry) is read from it. Tests inject one to expire fetch
	// requests.
	Clock db.Clock
}

// NewStore returns a Store over d that records events in ob and reads
// clients and templates through cs and ts.
func NewStore(d *db.DB, ob *outbox.Outbox, cs *clients.Store, ts *templates.Store) *Store {
	return &Store{DB: d, Outbox: ob, Clients: cs, Templates: ts}
}

func (s *Store) now() time.Time { return s.Clock.Now() }

func (s *Store) outbox() *outbox.Outbox {
	if s.Outbox == nil {
		return &outbox.Outbox{}
	}
	return s.Outbox
}

// ErrNotEditable is the business-rule error for a change to a final act:
// 400 with the descriptive key errors.status.
func ErrNotEditable(a *Act) error {
	return apperr.E(apperr.Invalid, "the act is final and can no longer be changed").
		WithField("status", fmt.Sprintf("act is %s; only draft acts can be changed", a.Status))
}

func notFound() error { return apperr.E(apperr.NotFound, "act not found") }

// Lock loads the act for a change inside tx, holding its row lock until tx
// ends (FOR UPDATE on PostgreSQL; on SQLite the transaction already holds
// the write lock). Every writer of an act or its data points takes this
// lock first, so checks made under it stay true until commit.
func Lock(ctx context.Context, d *db.DB, tx *gorm.DB, actUUID uuid.UUID) (*Act, error) {
	var a Act
	res := d.ForUpdate(tenant.Scope(ctx, tx)).Where("uuid = ?", actUUID).Limit(1).Find(&a)
	if res.Error != nil {
		return nil, fmt.Errorf("acts: lock act %s: %w", actUUID, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, notFound()
	}
	return &a, nil
}

// LockEditable is Lock for writers that change the act or its data: it
// also enforces the editability rule (drafts only), with the 400 every such
// writer answers for a final act.
func LockEditable(ctx context.Context, d *db.DB, tx *gorm.DB, actUUID uuid.UUID) (*Act, error) {
	a, err := Lock(ctx, d, tx, actUUID)
	if err != nil {
		return nil, err
	}
	if !a.Editable() {
		return nil, ErrNotEditable(a)
	}
	return a, nil
}

// Create makes a draft act of client clientID from template templateID,
// with one data point per template field, in one transaction that also
// records the act_created history entry and the act.created event.
//
// Built-in provider fields (client.*, act.created_at) are filled at once
// from the client and the act, so a new act shows them without a fetch
// request; a later fetch request refreshes them. Such an initial fill is
// revision 0: it is the act's starting state, not a change.
func (s *Store) Create(ctx context.Context, p *auth.Principal, clientID, templateID int64, title string) (_ *Detail, err error) {
	defer apperr.Wrap(&err, "acts.Create")
	var out *Detail
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		// Both reads lock their row against a concurrent change inside this
		// transaction (see clients.Store.Get and templates.Store.Get): the
		// client cannot be deleted, nor the template edited in place, before
		// the act that uses them commits.
		fe := apperr.FieldErrors{}
		c, err := s.Clients.GetTx(ctx, tx, clientID)
		if apperr.Is(err, apperr.NotFound) {
			fe.Add("client_id", fmt.Sprintf("client %d does not exist", clientID))
		} else if err != nil {
			return err
		}
		tpl, err := s.Templates.GetTx(ctx, tx, templateID)
		if apperr.Is(err, apperr.NotFound) {
			fe.Add("template_id", fmt.Sprintf("template %d does not exist", templateID))
		} else if err != nil {
			return err
		}
		if err := fe.Err(apperr.Invalid, "the act cannot be created"); err != nil {
			return err
		}
		fields := tpl.Fields
		a := Act{TenantID: tenant.ID(ctx), UUID: uuid.New(), ClientID: clientID, TemplateID: templateID, Title: title, Status: StatusDraft}
		if err := s.insert(tx, &a); err != nil {
			return err
		}
		now := a.CreatedAt
		dps := make([]DataPoint, len(fields))
		for i, f := range fields {
			dps[i] = DataPoint{
				ActUUID: a.UUID, TemplateFieldID: f.ID, Position: f.Position, Key: f.Key, Name: f.Name,
				Type: fieldtype.Type(f.Type), Source: f.Source, Options: f.Options, UpdatedAt: now,
			}
			if dps[i].Builtin() {
				if v, err := BuiltinValue(&dps[i], c, &a); err == nil {
					dps[i].Value, dps[i].SourceValue = &v, &v
				}
			}
		}
		if err := insertDataPoints(ctx, tx, dps); err != nil {
			return err
		}
		if err := Record(ctx, tx, UserActor(p), now, HistoryEntry{ActUUID: a.UUID, Kind: KindActCreated}); err != nil {
			return err
		}
		out = &Detail{Act: a, Data: dps, Fetch: map[int64]*FetchState{}}
		wire, err := out.API()
		if err != nil {
			return err
		}
		_, err = s.outbox().Emit(ctx, tx, outbox.Event{Kind: outbox.ActCreated, OccurredAt: now, Data: models.ActCreatedPayload{Act: wire}})
		return err
	})
	return out, err
}

// insertDataPoints allocates ids for dps in one statement and inserts them
// in one batch.
func insertDataPoints(ctx context.Context, tx *gorm.DB, dps []DataPoint) error {
	if len(dps) == 0 {
		return nil
	}
	tid := tenant.ID(ctx)
	first, err := db.NextIDs(tx, tid, "data_points", len(dps))
	if err != nil {
		return err
	}
	for i := range dps {
		dps[i].TenantID, dps[i].ID = tid, first+int64(i)
	}
	if err := tx.CreateInBatches(dps, 500).Error; err != nil {
		return fmt.Errorf("insert %d data points: %w", len(dps), err)
	}
	return nil
}

// Get returns the act with its data points and their most recent fetch, in
// three queries whatever the number of data points.
func (s *Store) Get(ctx context.Context, actUUID uuid.UUID) (_ *Detail, err error) {
	defer apperr.Wrap(&err, "acts.Get(%s)", actUUID)
	var a Act
	err = getAct.One(ctx, s.DB.DB, []any{actUUID}, scanAct(&a)...)
	switch {
	case errors.Is(err, db.ErrNoRows):
		return nil, notFound()
	case err != nil:
		return nil, err
	}
	return s.detail(ctx, s.DB.DB, &a)
}

// The reads of GET /acts/{uuid}, written as SQL (tenant.Query, db.Query)
// rather than built by GORM per request: outside a transaction on
// PostgreSQL they run on pgx itself, which scans an act's hundreds of data
// points without database/sql's conversion of every value (BENCHMARKS.md,
// "GET /acts/{uuid} on pgx"). In a transaction and on SQLite they run
// through GORM's Raw, the same statements.
var (
	getAct        = tenant.NewQuery("SELECT " + actColumns + " FROM acts WHERE tenant_id = ? AND uuid = ? LIMIT 1")
	getDataPoints = tenant.NewQuery("SELECT " + dataPointColumns + " FROM data_points WHERE tenant_id = ? AND act_uuid = ? ORDER BY position, id")
	// SQLite plans the join in the order written with CROSS JOIN: from
	// the act's data points, not from every fetch.
	latestFetchPostgres = latestFetchSQL("JOIN")
	latestFetchSQLite   = latestFetchSQL("CROSS JOIN")
)

// actColumns are Act's columns in the order scanAct reads them.
const actColumns = "tenant_id, uuid, client_id, template_id, title, status, created_at, updated_at, finalized_at, seq"

func scanAct(a *Act) []any {
	return []any{&a.TenantID, &a.UUID, &a.ClientID, &a.TemplateID, &a.Title, &a.Status, &a.CreatedAt, &a.UpdatedAt, &a.FinalizedAt, &a.Seq}
}

// latestFetchSQL is latestFetchQuery for every data point of an act.
func latestFetchSQL(join string) tenant.Query {
	return tenant.NewQuery(`SELECT data_points.id AS data_point_id, f.fetch_request_id, f.state, f.error, r.expires_at
FROM data_points ` + join + ` fetch_request_fields f ON f.tenant_id = data_points.tenant_id
	AND f.fetch_request_id = data_points.last_fetch_request_id AND f.data_point_id = data_points.id
JOIN fetch_requests r ON r.tenant_id = f.tenant_id AND r.id = f.fetch_request_id
WHERE data_points.tenant_id = ? AND data_points.act_uuid = ?`)
}

func (s *Store) detail(ctx context.Context, q *gorm.DB, a *Act) (*Detail, error) {
	d := &Detail{Act: *a}
	var err error
	d.Data, err = tenant.All(ctx, q, getDataPoints, []any{a.UUID}, 64, scanDataPoint)
	if err != nil {
		return nil, fmt.Errorf("load data points: %w", err)
	}
	f, err := latestFetch(ctx, q, a.UUID, nil, s.now())
	if err != nil {
		return nil, err
	}
	d.Fetch = f
	return d, nil
}

// dataPointColumns are DataPoint's columns in the order scanDataPoint
// reads them. An act's data points are read by hand rather than through
// GORM's reflection (db.ScanAll): for 200 of them that scan cost more than
// the query (BENCHMARKS.md, "Load").
const dataPointColumns = "tenant_id, id, act_uuid, template_field_id, position, key, name, type, source, options, value, source_value, revision, updated_at, last_fetch_request_id"

func scanDataPoint(p *DataPoint) []any {
	return []any{&p.TenantID, &p.ID, &p.ActUUID, &p.TemplateFieldID, &p.Position, &p.Key, &p.Name, &p.Type, &p.Source,
		&p.Options, &p.Value, &p.SourceValue, &p.Revision, &p.UpdatedAt, &p.LastFetchRequestID}
}

// latestFetch returns, in one query, the most recent fetch of each data
// point of the act (only of ids, when given) with expiry derived at now. It
// follows each data point's last_fetch_request_id, so its cost does not grow
// with the act's fetch history.
func latestFetch(ctx context.Context, q *gorm.DB, actUUID uuid.UUID, ids []int64, now time.Time) (map[int64]*FetchState, error) {
	type row struct {
		DataPointID    int64
		FetchRequestID uuid.UUID
		State          FieldState
		Error          *string
		ExpiresAt      time.Time
	}
	dest := func(r *row) []any {
		return []any{&r.DataPointID, &r.FetchRequestID, &r.State, &r.Error, &r.ExpiresAt}
	}
	var rows []row
	var err error
	switch {
	case ids != nil:
		rows, err = db.ScanAll(latestFetchQuery(ctx, q, actUUID, ids), 64, dest)
	case q.Dialector.Name() == db.SQLite:
		rows, err = tenant.All(ctx, q, latestFetchSQLite, []any{actUUID}, 64, dest)
	default:
		rows, err = tenant.All(ctx, q, latestFetchPostgres, []any{actUUID}, 64, dest)
	}
	if err != nil {
		return nil, fmt.Errorf("acts: latest fetch states: %w", err)
	}
	out := make(map[int64]*FetchState, len(rows))
	for _, r := range rows {
		out[r.DataPointID] = &FetchState{
			DataPointID: r.DataPointID, FetchRequestID: r.FetchRequestID,
			State: derivedState(r.State, r.ExpiresAt, now), Error: r.Error, ExpiresAt: r.ExpiresAt.UTC(),
		}
	}
	return out, nil
}

// latestFetchQuery is latestFetch's statement. It starts from the act's
// data points (data_points_act_idx) and follows each one's
// last_fetch_request_id by primary key. On SQLite the join order is fixed
// (CROSS JOIN is SQLite's join-order control): without statistics, which
// the service never gathers there, the embedded SQLite (3.54) started from
// fetch_request_fields_dp_idx instead, reading every fetch field of the
// tenant for each act (GET /acts/{uuid} with 50 data points took 157 ms
// beside 42,000 fetch fields; BENCHMARKS.md, "SQLite").
func latestFetchQuery(ctx context.Context, q *gorm.DB, actUUID uuid.UUID, ids []int64) *gorm.DB {
	join := "JOIN"
	if q.Dialector.Name() == db.SQLite {
		join = "CROSS JOIN"
	}
	sel := tenant.Scope(ctx, q.Table("data_points")).
		Select(`data_points.id AS data_point_id, f.fetch_request_id, f.state, f.error, r.expires_at`).
		Joins(join+` fetch_request_fields f ON f.tenant_id = data_points.tenant_id
			AND f.fetch_request_id = data_points.last_fetch_request_id AND f.data_point_id = data_points.id`).
		Joins("JOIN fetch_requests r ON r.tenant_id = f.tenant_id AND r.id = f.fetch_request_id").
		Where("data_points.act_uuid = ?", actUUID)
	if ids != nil {
		sel = sel.Where("data_points.id IN ?", ids)
	}
	return sel
}

// insert numbers a new act and writes it. The clock is read after the
// number is taken (the tenant's sequence row stays locked until commit), so
// that seq order and created_at order agree on one clock.
func (s *Store) insert(tx *gorm.DB, a *Act) error {
	seq, err := NextSeq(tx, a.TenantID)
	if err != nil {
		return err
	}
	now, err := db.Stamp(tx, a.TenantID, StampList, s.now())
	if err != nil {
		return err
	}
	a.Seq, a.CreatedAt, a.UpdatedAt = seq, now, now
	if err := tx.Create(a).Error; err != nil {
		return fmt.Errorf("insert act: %w", err)
	}
	return nil
}

// NextSeq allocates the next creation number (Act.Seq) of the tenant's
// acts. Whatever inserts acts takes their numbers here (a bulk import:
// db.NextIDs with SeqName), never by hand.
func NextSeq(tx *gorm.DB, tenantID int64) (int64, error) {
	return db.NextID(tx, tenantID, SeqName)
}

// SeqName is the id_sequences name of the acts' creation numbers.
const SeqName = "acts.seq"

// StampList is the db.Stamp list of the acts' updated_at: every write of
// an act's updated_at takes it, so that an incremental sync sees changes in
// commit order.
const StampList = "acts"

// Filter narrows List; nil fields do not filter. All set fields must
// match.
type Filter struct {
	ClientID   *int64
	Status     *Status
	TemplateID *int64
	// UpdatedSince keeps the acts changed strictly after it and orders
	// them by (updated_at, seq), oldest change first (db.Stamp).
	UpdatedSince *time.Time
}

// List returns a page of acts, newest first (oldest change first with
// UpdatedSince), and the total matching.
func (s *Store) List(ctx context.Context, f Filter, pg page.Request) (_ []Act, total int64, err error) {
	defer apperr.Wrap(&err, "acts.List")
	filtered := func() *gorm.DB {
		q := tenant.Scope(ctx, s.DB.DB.Model(&Act{}))
		if f.ClientID != nil {
			q = q.Where("client_id = ?", *f.ClientID)
		}
		if f.Status != nil {
			q = q.Where("status = ?", *f.Status)
		}
		if f.TemplateID != nil {
			q = q.Where("template_id = ?", *f.TemplateID)
		}
		if f.UpdatedSince != nil {
			q = q.Where("updated_at > ?", f.UpdatedSince.UTC().Truncate(time.Microsecond))
		}
		return q
	}
	keys := filtered()
	var status *string
	if f.Status != nil {
		st := string(*f.Status)
		status = &st
	}
	// Every filter but client and template together has a stored total
	// (migrations 00060, 00095); that pair is counted over the client's
	// acts, which are few (acts_client_seq_idx).
	// A sync (UpdatedSince) counts over acts_updated_idx, as many entries
	// as acts changed since.
	switch {
	case f.UpdatedSince != nil, f.TemplateID != nil && f.ClientID != nil:
		err = filtered().Count(&total).Error
	case f.TemplateID != nil:
		total, err = counts.Total(ctx, s.DB.DB, counts.ActsOfTemplate(*f.TemplateID, status))
	default:
		total, err = counts.Total(ctx, s.DB.DB, counts.Acts(f.ClientID, status))
	}
	if err != nil {
		return nil, 0, err
	}
	var out []Act
	if pg.Beyond(total) {
		return out, total, nil
	}
	// Newest first is seq descending (the creation number, migration
	// 00080). A deep page of the whole list or of one status starts from
	// the block that holds its first act (counts.SeekNewest); one client's
	// acts are few and skip directly. Either way the page's keys come from
	// an index-only scan and only its rows are read from the table (a
	// deferred join).
	// A template's acts filtered by nothing else seek the same way through
	// their own blocks (migration 00101); with a status too they page by
	// OFFSET over acts_template_seq_idx, index entries only.
	skip := int64(pg.Offset())
	if f.UpdatedSince != nil {
		keys = keys.Select("uuid").Order("updated_at, seq").Offset(int(skip)).Limit(pg.Limit)
		err := tenant.Scope(ctx, s.DB.DB).Where("uuid IN (?)", keys).Order("updated_at, seq").Find(&out).Error
		return out, total, err
	}
	kind := ""
	switch {
	case f.ClientID == nil && f.TemplateID == nil:
		kind = counts.ActBlocks(status)
	case f.TemplateID != nil && f.ClientID == nil && f.Status == nil:
		kind = counts.TemplateActBlocks(*f.TemplateID)
	}
	if kind != "" {
		below, rest, ok, err := counts.SeekNewest(ctx, s.DB.DB, kind, skip, total)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return out, total, nil
		}
		if below > 0 {
			keys = keys.Where("seq < ?", below)
		}
		skip = rest
	}
	keys = keys.Select("uuid").Order("seq DESC").Offset(int(skip)).Limit(pg.Limit)
	if err := tenant.Scope(ctx, s.DB.DB).Where("uuid IN (?)", keys).Order("seq DESC").Find(&out).Error; err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// Update changes a draft act's title.
func (s *Store) Update(ctx context.Context, p *auth.Principal, actUUID uuid.UUID, title string) (_ *Detail, err error) {
	defer apperr.Wrap(&err, "acts.Update(%s)", actUUID)
	var out *Detail
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		a, err := LockEditable(ctx, s.DB, tx, actUUID)
		if err != nil {
			return err
		}
		now, err := db.Stamp(tx, a.TenantID, StampList, s.now())
		if err != nil {
			return err
		}
		old := a.Title
		if err := tenant.Scope(ctx, tx.Model(&Act{})).Where("uuid = ?", a.UUID).
			Updates(map[string]any{"title": title, "updated_at": now}).Error; err != nil {
			return err
		}
		a.Title, a.UpdatedAt = title, now
		if err := Record(ctx, tx, UserActor(p), now, HistoryEntry{ActUUID: a.UUID, Kind: KindActUpdated, OldValue: &old, NewValue: &title}); err != nil {
			return err
		}
		if out, err = s.detail(ctx, tx, a); err != nil {
			return err
		}
		return s.emitAct(ctx, tx, outbox.ActUpdated, out)
	})
	return out, err
}

// Finalize moves a draft to final. A final act is no longer editable;
// finalizing one again is a 400 with errors.status.
func (s *Store) Finalize(ctx context.Context, p *auth.Principal, actUUID uuid.UUID) (_ *Detail, err error) {
	defer apperr.Wrap(&err, "acts.Finalize(%s)", actUUID)
	var out *Detail
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		a, err := Lock(ctx, s.DB, tx, actUUID)
		if err != nil {
			return err
		}
		if !a.Editable() {
			return apperr.E(apperr.Invalid, "the act is already final").
				WithField("status", "act is already final")
		}
		now, err := db.Stamp(tx, a.TenantID, StampList, s.now())
		if err != nil {
			return err
		}
		if err := tenant.Scope(ctx, tx.Model(&Act{})).Where("uuid = ?", a.UUID).
			Updates(map[string]any{"status": StatusFinal, "finalized_at": now, "updated_at": now}).Error; err != nil {
			return err
		}
		a.Status, a.UpdatedAt, a.FinalizedAt = StatusFinal, now, &now
		if err := Record(ctx, tx, UserActor(p), now, HistoryEntry{ActUUID: a.UUID, Kind: KindActFinalized}); err != nil {
			return err
		}
		if out, err = s.detail(ctx, tx, a); err != nil {
			return err
		}
		return s.emitAct(ctx, tx, outbox.ActFinalized, out)
	})
	return out, err
}

// Duplicate creates a new draft with the source act's client, template,
// title and current values (value and source value; revisions restart at
// 0, fetch states are not copied). It emits act.duplicated, never
// act.created. Any act, draft or final, may be duplicated: duplicating a
// final act is how a new evaluation starts from the last one.
func (s *Store) Duplicate(ctx context.Context, p *auth.Principal, actUUID uuid.UUID) (_ *Detail, err error) {
	defer apperr.Wrap(&err, "acts.Duplicate(%s)", actUUID)
	var out *Detail
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		var src Act
		res := tenant.Scope(ctx, tx).Where("uuid = ?", actUUID).Limit(1).Find(&src)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound()
		}
		var srcData []DataPoint
		if err := tenant.Scope(ctx, tx).Where("act_uuid = ?", src.UUID).Order("position, id").Find(&srcData).Error; err != nil {
			return err
		}
		a := Act{TenantID: src.TenantID, UUID: uuid.New(), ClientID: src.ClientID, TemplateID: src.TemplateID, Title: src.Title, Status: StatusDraft}
		if err := s.insert(tx, &a); err != nil {
			return err
		}
		now := a.CreatedAt
		dps := make([]DataPoint, len(srcData))
		for i, d := range srcData {
			dps[i] = DataPoint{
				ActUUID: a.UUID, TemplateFieldID: d.TemplateFieldID, Position: d.Position, Key: d.Key, Name: d.Name,
				Type: d.Type, Source: d.Source, Options: d.Options, Value: d.Value, SourceValue: d.SourceValue, UpdatedAt: now,
			}
		}
		if err := insertDataPoints(ctx, tx, dps); err != nil {
			return err
		}
		if err := Record(ctx, tx, UserActor(p), now, HistoryEntry{ActUUID: a.UUID, Kind: KindActDuplicated}); err != nil {
			return err
		}
		out = &Detail{Act: a, Data: dps, Fetch: map[int64]*FetchState{}}
		wire, err := out.API()
		if err != nil {
			return err
		}
		_, err = s.outbox().Emit(ctx, tx, outbox.Event{
			Kind: outbox.ActDuplicated, OccurredAt: now,
			Data: models.ActDuplicatedPayload{Act: wire, SourceActUuid: src.UUID},
		})
		return err
	})
	return out, err
}

// Delete removes a draft act with its data points, history and fetch
// requests. A final act is a 400 with errors.status.
func (s *Store) Delete(ctx context.Context, actUUID uuid.UUID) (err error) {
	defer apperr.Wrap(&err, "acts.Delete(%s)", actUUID)
	return s.DB.Tx(ctx, func(tx *gorm.DB) error {
		a, err := Lock(ctx, s.DB, tx, actUUID)
		if err != nil {
			return err
		}
		if !a.Editable() {
			return apperr.E(apperr.Invalid, "only draft acts can be deleted").
				WithField("status", fmt.Sprintf("act is %s; only draft acts can be deleted", a.Status))
		}
		// The tombstone takes the list's stamp, like an update (db.Stamp).
		at, err := db.Stamp(tx, a.TenantID, StampList, s.now())
		if err != nil {
			return err
		}
		if err := tombstones.Record(ctx, tx, tombstones.Acts, a.UUID.String(), &a.ClientID, at); err != nil {
			return err
		}
		if err := tenant.Scope(ctx, tx).Where("uuid = ?", a.UUID).Delete(&Act{}).Error; err != nil {
			return err
		}
		return s.emit(ctx, tx, outbox.ActDeleted, at, models.ActDeletedPayload{ActUuid: a.UUID, ClientId: a.ClientID})
	})
}

// Deleted returns a page of the tombstones of deleted acts, deleted
// strictly after since (all when nil), oldest first.
func (s *Store) Deleted(ctx context.Context, since *time.Time, p page.Request) ([]tombstones.Tombstone, int64, error) {
	return tombstones.List(ctx, s.DB.DB, tombstones.Acts, since, p)
}

// LatestForClient returns the client's newest act by created_at. A missing
// client (or another tenant's) and a client without acts are both
// NotFound, with different messages.
func (s *Store) LatestForClient(ctx context.Context, clientID int64) (_ *Detail, err error) {
	defer apperr.Wrap(&err, "acts.LatestForClient(%d)", clientID)
	var n int64
	if err := tenant.Scope(ctx, s.DB.DB.Model(&clients.Client{})).Where("id = ?", clientID).Count(&n).Error; err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, apperr.E(apperr.NotFound, "client not found")
	}
	var a Act
	res := tenant.Scope(ctx, s.DB.DB).Where("client_id = ?", clientID).Order("created_at DESC, uuid DESC").Limit(1).Find(&a)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, apperr.E(apperr.NotFound, "the client has no acts")
	}
	return s.detail(ctx, s.DB.DB, &a)
}
