package acts

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// DefaultWindow is the processing window when none is configured (spec
// section 8: 30 minutes, queue and delivery included).
const DefaultWindow = 30 * time.Minute

func (s *Store) window() time.Duration {
	if s.Window <= 0 {
		return DefaultWindow
	}
	return s.Window
}

// CreateRequest asks for a refresh of the act's data points ids.
//
// Built-in fields are filled at once from the client and the act (value and
// source value; the revision increments when the value changes), their
// state is accepted (failed when the provider value does not fit the
// field's type), and each gets a history entry by the system actor. External
// fields become awaiting with their revision snapshotted, superseding any
// older request's awaiting state of the same fields. When external fields
// are selected, one act.fetch_data event carries the whole selected set.
//
// Refused with 400, with nothing created, when the act is final
// (errors.status), an id is not in the act or names a manual field
// (errors["data_point_ids[i]"]), or external fields are selected and no
// eligible act.fetch_data registration exists (errors.webhooks).
func (s *Store) CreateRequest(ctx context.Context, p *auth.Principal, actUUID uuid.UUID, ids []int64) (_ *FetchView, err error) {
	defer apperr.Wrap(&err, "acts.CreateRequest(%s)", actUUID)
	var out *FetchView
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		sel, err := s.selectForFetch(ctx, tx, actUUID, ids)
		if err != nil {
			return err
		}
		now := s.now()
		out, err = s.persistRequest(ctx, tx, p, sel, now)
		if err != nil {
			return err
		}
		if err := s.emitBuiltinFills(ctx, tx, sel, out, now); err != nil {
			return err
		}
		if !sel.external {
			return nil
		}
		return s.emitFetchData(ctx, tx, sel, &out.Request, now)
	})
	return out, err
}

// fetchSelection is a validated fetch request: the act and the selected
// data points (position order), both locked until the transaction ends.
type fetchSelection struct {
	act      *Act
	ids      []int64
	dps      []DataPoint
	external bool // some selected field is fetched by an integration
	builtin  bool // some selected field is filled by the service
}

// selectForFetch is the validation step of CreateRequest: it locks the act
// and the selected data points and refuses, with nothing written, a final
// act, an id that is not a refreshable data point of the act, or external
// fields no integration can receive.
func (s *Store) selectForFetch(ctx context.Context, tx *gorm.DB, actUUID uuid.UUID, ids []int64) (*fetchSelection, error) {
	a, err := LockEditable(ctx, s.DB, tx, actUUID)
	if err != nil {
		return nil, err
	}
	sel := &fetchSelection{act: a, ids: ids}
	if err := s.DB.ForUpdate(tenant.Scope(ctx, tx)).Where("act_uuid = ? AND id IN ?", a.UUID, ids).
		Order("position, id").Find(&sel.dps).Error; err != nil {
		return nil, fmt.Errorf("load data points: %w", err)
	}
	if err := sel.check(); err != nil {
		return nil, err
	}
	if sel.external {
		return sel, s.requireFetchReceiver(ctx, tx)
	}
	return sel, nil
}

// check reports every id that is not in the act or names a manual field,
// and notes which kinds of field are selected.
func (sel *fetchSelection) check() error {
	byID := make(map[int64]*DataPoint, len(sel.dps))
	for i := range sel.dps {
		byID[sel.dps[i].ID] = &sel.dps[i]
	}
	fe := apperr.FieldErrors{}
	for i, id := range sel.ids {
		key := fmt.Sprintf("data_point_ids[%d]", i)
		d, ok := byID[id]
		switch {
		case !ok:
			fe.Add(key, fmt.Sprintf("data point %d is not in the act", id))
		case !d.Refreshable():
			fe.Add(key, fmt.Sprintf("data point %d (%s) is entered manually and cannot be refreshed", id, d.Key))
		case d.External():
			sel.external = true
		default:
			sel.builtin = true
		}
	}
	return fe.Err(apperr.Invalid, "the fetch request cannot be created")
}

// requireFetchReceiver refuses a request for external fields when no
// eligible act.fetch_data registration would receive it.
func (s *Store) requireFetchReceiver(ctx context.Context, tx *gorm.DB) error {
	n, err := s.outbox().EligibleCount(ctx, tx, outbox.ActFetchData)
	if err != nil {
		return err
	}
	if n == 0 {
		return apperr.E(apperr.Invalid, "no integration can receive the request").
			WithField("webhooks", "external fields need an active act.fetch_data webhook registration; register one first")
	}
	return nil
}

// persistRequest is the write step of CreateRequest: the request row, the
// selected fields now pointing at it (older awaiting states superseded),
// built-in values filled, and the history.
func (s *Store) persistRequest(ctx context.Context, tx *gorm.DB, p *auth.Principal, sel *fetchSelection, now time.Time) (*FetchView, error) {
	req, err := s.insertRequest(ctx, tx, p, sel, now)
	if err != nil {
		return nil, err
	}
	var c *clients.Client
	if sel.builtin {
		if c, err = s.Clients.GetTx(ctx, tx, sel.act.ClientID); err != nil {
			return nil, fmt.Errorf("load client %d: %w", sel.act.ClientID, err)
		}
	}
	fields := make([]FetchField, len(sel.dps))
	view := &FetchView{Request: *req, Fields: make([]FetchFieldView, len(sel.dps))}
	var writes []dpWrite
	var sysHist []HistoryEntry
	for i := range sel.dps {
		d := &sel.dps[i]
		f := FetchField{TenantID: req.TenantID, FetchRequestID: req.ID, DataPointID: d.ID, External: d.External(),
			State: FetchAwaiting, RevisionSnapshot: d.Revision, UpdatedAt: now}
		if !d.External() {
			w, h := fillBuiltin(d, c, sel.act, &f, now)
			if w != nil {
				writes = append(writes, *w)
				view.filled = append(view.filled, d.ID)
			}
			sysHist = append(sysHist, h)
		}
		fields[i] = f
		view.Fields[i] = FetchFieldView{DataPointID: d.ID, Key: d.Key, External: f.External, State: f.State, Error: f.Error}
	}
	if err := updateDataPoints(ctx, tx, writes, now); err != nil {
		return nil, err
	}
	if err := tx.CreateInBatches(fields, 500).Error; err != nil {
		return nil, fmt.Errorf("insert request fields: %w", err)
	}
	rid := req.ID
	if err := Record(ctx, tx, UserActor(p), now,
		HistoryEntry{ActUUID: sel.act.UUID, Kind: KindFetchRequested, FetchRequestID: &rid}); err != nil {
		return nil, err
	}
	if err := Record(ctx, tx, SystemActor, now, sysHist...); err != nil {
		return nil, err
	}
	view.Status = requestStatus(req, view.Fields, now)
	return view, nil
}

// insertRequest creates the request row and points the selected fields at
// it. A newer request supersedes older awaiting states of the same fields:
// results for the old request now get 409.
func (s *Store) insertRequest(ctx context.Context, tx *gorm.DB, p *auth.Principal, sel *fetchSelection, now time.Time) (*FetchRequest, error) {
	rid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	req := &FetchRequest{
		TenantID: tenant.ID(ctx), ID: rid, ActUUID: sel.act.UUID, RequestedByUserID: p.UserID,
		RequestedAt: now, ExpiresAt: now.Add(s.window()),
	}
	if p.ClientID != "" {
		cid := p.ClientID
		req.RequestedByClientID = &cid
	}
	if err := tx.Create(req).Error; err != nil {
		return nil, fmt.Errorf("insert fetch request: %w", err)
	}
	if err := tenant.Scope(ctx, tx.Table("fetch_request_fields")).
		Where("data_point_id IN ? AND state = ?", sel.ids, FetchAwaiting).
		Updates(map[string]any{"state": FetchSuperseded, "updated_at": now}).Error; err != nil {
		return nil, fmt.Errorf("supersede older requests: %w", err)
	}
	if err := tenant.Scope(ctx, tx.Table("data_points")).Where("id IN ?", sel.ids).
		Update("last_fetch_request_id", req.ID).Error; err != nil {
		return nil, fmt.Errorf("point data points at the request: %w", err)
	}
	return req, nil
}

// fillBuiltin computes built-in data point d's value for request field f
// (of act a about client c) and sets f's outcome: accepted with the value,
// or failed when the provider value does not fit the field. It returns the
// data point write (nil when value and source value are already right) and
// the system's history entry, and updates d in memory.
func fillBuiltin(d *DataPoint, c *clients.Client, a *Act, f *FetchField, now time.Time) (*dpWrite, HistoryEntry) {
	rid := f.FetchRequestID
	v, err := BuiltinValue(d, c, a)
	if err != nil {
		msg := err.Error()
		f.State, f.Error = FetchFailed, &msg
		return nil, HistoryEntry{ActUUID: a.UUID, Kind: KindFetchFailed, DataPointID: &d.ID, FetchRequestID: &rid, Error: &msg}
	}
	f.State, f.ResultValue = FetchAccepted, &v
	h := HistoryEntry{ActUUID: a.UUID, Kind: KindValueAccepted, DataPointID: &d.ID, FetchRequestID: &rid, OldValue: d.Value, NewValue: &v}
	changed := d.Value == nil || *d.Value != v
	var w *dpWrite
	if changed || d.SourceValue == nil || *d.SourceValue != v {
		w = &dpWrite{ID: d.ID, Value: &v, SetSource: true, Bump: changed}
	}
	if changed {
		d.Revision++
		d.UpdatedAt = now
	}
	d.Value, d.SourceValue = &v, &v
	return w, h
}

// emitFetchData is the event step of CreateRequest: one act.fetch_data
// event with the whole selected set, expiring with the request.
func (s *Store) emitFetchData(ctx context.Context, tx *gorm.DB, sel *fetchSelection, req *FetchRequest, now time.Time) error {
	payload, err := fetchDataPayload(sel.act, req, sel.dps)
	if err != nil {
		return err
	}
	exp := req.ExpiresAt
	_, err = s.outbox().Emit(ctx, tx, outbox.Event{Kind: outbox.ActFetchData, OccurredAt: now, Data: payload, ExpiresAt: &exp})
	return err
}

// fetchDataPayload is the act.fetch_data data object: the whole selected
// set, as snapshots of the data points' definitions (never the live
// template), with effective options.
func fetchDataPayload(a *Act, r *FetchRequest, dps []DataPoint) (models.ActFetchDataPayload, error) {
	out := models.ActFetchDataPayload{
		RequestId: r.ID, RequestedAt: r.RequestedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		Act:    models.EventAct{Uuid: a.UUID, ClientId: a.ClientID, TemplateId: a.TemplateID, Title: a.Title},
		Fields: make([]models.FieldDefinition, 0, len(dps)),
	}
	for i := range dps {
		d := &dps[i]
		opts, err := APIOptions(d.Options)
		if err != nil {
			return out, err
		}
		out.Fields = append(out.Fields, models.FieldDefinition{
			Id: d.ID, TemplateFieldId: d.TemplateFieldID, TemplateFieldKey: d.Key, TemplateFieldName: d.Name,
			Type: models.FieldType(d.Type), ExternalDataField: d.External(), Source: models.FieldSource(d.Source), Options: opts,
		})
	}
	return out, nil
}

func requestNotFound() error { return apperr.E(apperr.NotFound, "fetch request not found") }

// GetRequest returns request id of the act with each field's state as of
// now (awaiting fields of an expired request read as expired).
func (s *Store) GetRequest(ctx context.Context, actUUID, id uuid.UUID) (_ *FetchView, err error) {
	defer apperr.Wrap(&err, "acts.GetRequest(%s)", id)
	var req FetchRequest
	res := tenant.Scope(ctx, s.DB.DB).Where("id = ? AND act_uuid = ?", id, actUUID).Limit(1).Find(&req)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, requestNotFound()
	}
	return requestView(ctx, s.DB.DB, &req, s.now())
}

// requestView loads req's fields through q (the database, or a
// transaction that sees its own writes) with their states as of now.
func requestView(ctx context.Context, q *gorm.DB, req *FetchRequest, now time.Time) (*FetchView, error) {
	var rows []FetchFieldView
	if err := tenant.Scope(ctx, q.Table("fetch_request_fields")).
		Select("fetch_request_fields.data_point_id, dp.key, fetch_request_fields.external, fetch_request_fields.state, fetch_request_fields.error").
		Joins("JOIN data_points dp ON dp.tenant_id = fetch_request_fields.tenant_id AND dp.id = fetch_request_fields.data_point_id").
		Where("fetch_request_fields.fetch_request_id = ?", req.ID).
		Order("dp.position, dp.id").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("load request fields: %w", err)
	}
	for i := range rows {
		rows[i].State = derivedState(rows[i].State, req.ExpiresAt, now)
	}
	v := &FetchView{Request: *req, Fields: rows}
	v.Status = requestStatus(req, v.Fields, now)
	return v, nil
}

// API renders the view.
func (v *FetchView) API() models.FetchRequest {
	out := models.FetchRequest{
		Id: v.Request.ID, ActUuid: v.Request.ActUUID,
		RequestedAt: v.Request.RequestedAt.UTC(), ExpiresAt: v.Request.ExpiresAt.UTC(),
		Status: models.FetchRequestStatus(v.Status), Fields: make([]models.FetchRequestField, len(v.Fields)),
	}
	for i, f := range v.Fields {
		out.Fields[i] = models.FetchRequestField{DataPointId: f.DataPointID, TemplateFieldKey: f.Key,
			ExternalDataField: f.External, State: models.FieldFetchState(f.State), Error: f.Error}
	}
	return out
}

// PurgeFetchRequests deletes up to batch fetch requests of every tenant
// that expired before before (with their field rows), and returns how many
// went. An expired request can no longer change, and the data points keep
// their values and history: only the request's record goes, so a data
// point whose last fetch is purged shows no fetch state.
func PurgeFetchRequests(ctx context.Context, d *db.DB, before time.Time, batch int) (int64, error) {
	lock := ""
	if d.Dialect == db.Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	res := d.WithContext(ctx).Exec(`DELETE FROM fetch_requests WHERE (tenant_id, id) IN (
  SELECT tenant_id, id FROM fetch_requests WHERE expires_at < ?
  ORDER BY expires_at LIMIT ?`+lock+`)`, before, batch)
	if res.Error != nil {
		return 0, fmt.Errorf("acts: purge fetch requests: %w", res.Error)
	}
	return res.RowsAffected, nil
}
