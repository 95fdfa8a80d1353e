package acts

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/pkg/apperr"
	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/clients"
	"github.com/finsvc/finsvc/pkg/outbox"
	"github.com/finsvc/finsvc/pkg/tenant"
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
func (s *Store) CreateRequest(ctx context.Context, p *auth.Principal, actUUID string, ids []int64) (_ *View, err error) {
	defer apperr.Wrap(&err, "acts.CreateRequest(%s)", actUUID)
	var out *View
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		a, err := LockEditable(ctx, s.DB, tx, actUUID)
		if err != nil {
			return err
		}
		var dps []DataPoint
		if err := s.DB.ForUpdate(tenant.Scope(ctx, tx)).Where("act_uuid = ? AND id IN ?", a.UUID, ids).
			Order("position, id").Find(&dps).Error; err != nil {
			return fmt.Errorf("load data points: %w", err)
		}
		byID := make(map[int64]*DataPoint, len(dps))
		for i := range dps {
			byID[dps[i].ID] = &dps[i]
		}
		fe := apperr.FieldErrors{}
		external, builtin := false, false
		for i, id := range ids {
			key := fmt.Sprintf("data_point_ids[%d]", i)
			d, ok := byID[id]
			switch {
			case !ok:
				fe.Add(key, fmt.Sprintf("data point %d is not in the act", id))
			case !d.Refreshable():
				fe.Add(key, fmt.Sprintf("data point %d (%s) is entered manually and cannot be refreshed", id, d.Key))
			case d.External():
				external = true
			default:
				builtin = true
			}
		}
		if err := fe.Err(apperr.Invalid, "the fetch request cannot be created"); err != nil {
			return err
		}
		if external {
			n, err := s.outbox().EligibleCount(ctx, tx, outbox.ActFetchData)
			if err != nil {
				return err
			}
			if n == 0 {
				return apperr.E(apperr.Invalid, "no integration can receive the request").
					WithField("webhooks", "external fields need an active act.fetch_data webhook registration; register one first")
			}
		}

		now := s.now()
		rid, err := uuid.NewV7()
		if err != nil {
			return err
		}
		req := Request{
			TenantID: tenant.ID(ctx), ID: rid.String(), ActUUID: a.UUID, RequestedByUserID: p.UserID,
			RequestedAt: now, ExpiresAt: now.Add(s.window()),
		}
		if p.ClientID != "" {
			cid := p.ClientID
			req.RequestedByClientID = &cid
		}
		if err := tx.Create(&req).Error; err != nil {
			return fmt.Errorf("insert fetch request: %w", err)
		}
		// A newer request supersedes older awaiting states of the same
		// fields: results for the old request now get 409.
		if err := tenant.Scope(ctx, tx.Table("fetch_request_fields")).
			Where("data_point_id IN ? AND state = ?", ids, FetchAwaiting).
			Updates(map[string]any{"state": FetchSuperseded, "updated_at": now}).Error; err != nil {
			return fmt.Errorf("supersede older requests: %w", err)
		}
		if err := tenant.Scope(ctx, tx.Table("data_points")).Where("id IN ?", ids).
			Update("last_fetch_request_id", req.ID).Error; err != nil {
			return fmt.Errorf("point data points at the request: %w", err)
		}

		var c *clients.Client
		if builtin {
			if c, err = clients.NewStore(s.DB).Get(ctx, tx, a.ClientID); err != nil {
				return fmt.Errorf("load client %d: %w", a.ClientID, err)
			}
		}
		fields := make([]Field, 0, len(dps))
		views := make([]FieldView, 0, len(dps))
		var writes []dpWrite
		var sysHist []HistoryEntry
		rf := req.ID
		for i := range dps {
			d := &dps[i]
			f := Field{TenantID: req.TenantID, FetchRequestID: req.ID, DataPointID: d.ID, External: d.External(),
				RevisionSnapshot: d.Revision, UpdatedAt: now}
			if d.External() {
				f.State = FetchAwaiting
			} else {
				v, berr := BuiltinValue(d, c, a)
				if berr != nil {
					msg := berr.Error()
					f.State, f.Error = FetchFailed, &msg
					sysHist = append(sysHist, HistoryEntry{ActUUID: a.UUID, Kind: KindFetchFailed,
						DataPointID: &d.ID, FetchRequestID: &rf, Error: &msg})
				} else {
					f.State, f.ResultValue = FetchAccepted, &v
					changed := d.Value == nil || *d.Value != v
					if changed || d.SourceValue == nil || *d.SourceValue != v {
						writes = append(writes, dpWrite{ID: d.ID, Value: &v, SetSource: true, Bump: changed})
					}
					sysHist = append(sysHist, HistoryEntry{ActUUID: a.UUID, Kind: KindValueAccepted,
						DataPointID: &d.ID, FetchRequestID: &rf, OldValue: d.Value, NewValue: &v})
					if changed {
						d.Revision++
						d.UpdatedAt = now
					}
					d.Value, d.SourceValue = &v, &v
				}
			}
			fields = append(fields, f)
			views = append(views, FieldView{DataPointID: d.ID, Key: d.Key, External: f.External, State: f.State, Error: f.Error})
		}
		if err := updateDataPoints(ctx, tx, writes, now); err != nil {
			return err
		}
		if err := tx.CreateInBatches(fields, 500).Error; err != nil {
			return fmt.Errorf("insert request fields: %w", err)
		}
		if err := Record(ctx, tx, UserActor(p), now,
			HistoryEntry{ActUUID: a.UUID, Kind: KindFetchRequested, FetchRequestID: &rf}); err != nil {
			return err
		}
		if err := Record(ctx, tx, SystemActor, now, sysHist...); err != nil {
			return err
		}
		if external {
			payload, err := fetchDataPayload(a, &req, dps)
			if err != nil {
				return err
			}
			exp := req.ExpiresAt
			if _, err := s.outbox().Emit(ctx, tx, outbox.Event{Kind: outbox.ActFetchData, OccurredAt: now,
				Data: payload, ExpiresAt: &exp}); err != nil {
				return err
			}
		}
		out = &View{Request: req, Fields: views}
		out.Status = status(&req, views, now)
		return nil
	})
	return out, err
}

// fetchDataPayload is the act.fetch_data data object: the whole selected
// set, as snapshots of the data points' definitions (never the live
// template), with effective options.
func fetchDataPayload(a *Act, r *Request, dps []DataPoint) (models.ActFetchDataPayload, error) {
	out := models.ActFetchDataPayload{
		RequestId: uuid.MustParse(r.ID), RequestedAt: r.RequestedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
		Act:    models.EventAct{Uuid: uuid.MustParse(a.UUID), ClientId: a.ClientID, TemplateId: a.TemplateID, Title: a.Title},
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
func (s *Store) GetRequest(ctx context.Context, actUUID, id string) (_ *View, err error) {
	defer apperr.Wrap(&err, "acts.GetRequest(%s)", id)
	if _, err := uuid.Parse(actUUID); err != nil {
		return nil, requestNotFound()
	}
	if _, err := uuid.Parse(id); err != nil {
		return nil, requestNotFound()
	}
	var req Request
	res := tenant.Scope(ctx, s.DB.DB).Where("id = ? AND act_uuid = ?", id, actUUID).Limit(1).Find(&req)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, requestNotFound()
	}
	type row struct {
		DataPointID int64
		Key         string
		External    bool
		State       string
		Error       *string
	}
	var rows []row
	if err := tenant.Scope(ctx, s.DB.DB.Table("fetch_request_fields")).
		Select("fetch_request_fields.data_point_id, dp.key, fetch_request_fields.external, fetch_request_fields.state, fetch_request_fields.error").
		Joins("JOIN data_points dp ON dp.tenant_id = fetch_request_fields.tenant_id AND dp.id = fetch_request_fields.data_point_id").
		Where("fetch_request_fields.fetch_request_id = ?", req.ID).
		Order("dp.position, dp.id").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("load request fields: %w", err)
	}
	now := s.now()
	v := &View{Request: req, Fields: make([]FieldView, len(rows))}
	for i, r := range rows {
		v.Fields[i] = FieldView{DataPointID: r.DataPointID, Key: r.Key, External: r.External,
			State: DerivedState(r.State, req.ExpiresAt, now), Error: r.Error}
	}
	v.Status = status(&req, v.Fields, now)
	return v, nil
}

// API renders the view.
func (v *View) API() models.FetchRequest {
	out := models.FetchRequest{
		Id: uuid.MustParse(v.Request.ID), ActUuid: uuid.MustParse(v.Request.ActUUID),
		RequestedAt: v.Request.RequestedAt.UTC(), ExpiresAt: v.Request.ExpiresAt.UTC(),
		Status: models.FetchRequestStatus(v.Status), Fields: make([]models.FetchRequestField, len(v.Fields)),
	}
	for i, f := range v.Fields {
		out.Fields[i] = models.FetchRequestField{DataPointId: f.DataPointID, TemplateFieldKey: f.Key,
			ExternalDataField: f.External, State: models.FieldFetchState(f.State), Error: f.Error}
	}
	return out
}
