package acts

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// MaxErrorLength is the longest error text of a data result, in characters
// (the contract's limit on error text).
const MaxErrorLength = 1000

// DataItem is one result or edit: the data point named by ID (preferred),
// TemplateFieldID or TemplateFieldKey, and exactly one of Value and Error.
type DataItem struct {
	ID               *int64
	TemplateFieldID  *int64
	TemplateFieldKey *string
	Value            *string
	Error            *string
}

// DataWrite is a single or bulk PUT of act data. With FetchRequestID it is
// a correlated result of that request; without, an ordinary edit of current
// values.
type DataWrite struct {
	FetchRequestID *uuid.UUID
	Items          []DataItem
	// DataID is set for the single-field PUT (the path's data point); Items
	// then holds one item without identifiers.
	DataID *int64
}

func (w *DataWrite) single() bool { return w.DataID != nil }

// key names a problem's location in the error body: "data[3].value" for a
// bulk item, "value" for the single PUT; attr "" names the item itself
// ("data[3]", or "data_id" for the single PUT).
func (w *DataWrite) key(i int, attr string) string {
	if w.single() {
		if attr == "" {
			return "data_id"
		}
		return attr
	}
	if attr == "" {
		return fmt.Sprintf("data[%d]", i)
	}
	return fmt.Sprintf("data[%d].%s", i, attr)
}

// WriteResult is what a write leaves: the written data points in item
// order, each with its most recent fetch.
type WriteResult struct {
	FetchRequestID *uuid.UUID
	Data           []DataPoint
	Fetch          map[int64]*FetchState
}

// resolved is a validated item.
type resolved struct {
	dp    *DataPoint
	value *string // normalized
	err   *string
	field *FetchField // the request's field, for a correlated write
	apply bool        // false for an identical re-send (accepted again, no change)
}

// Messages of the write rules, shared with the tests.
const (
	msgExactlyOne   = "exactly one of value and error is required"
	msgErrorNeedsFR = "an error can only be reported for a fetch request: fetch_request_id is required"
	msgErrorEmpty   = "must not be empty"
	msgNotInSet     = "is not among the external fields of the fetch request"
	msgDuplicate    = "names the same data point as another item"
	msgExpired      = "the fetch request expired"
	msgChanged      = "the field changed since the request"
	msgSuperseded   = "the field's fetch was superseded by a newer fetch request"
	msgOtherValue   = "a different value was already accepted for this field"
	msgValueTaken   = "a value was already accepted for this field"
	msgErrorTaken   = "an error was already reported for this field"
)

// WriteData runs a write by p. In order:
//
//  0. the act must exist (404) and be a draft (400, errors.status), checked
//     under the act's lock (the caller has already checked that p may
//     write: acts:write and a member or admin role);
//  1. the whole payload is validated; any problem is a 422 with per-item
//     messages and nothing is applied;
//  2. every correlated item's state is checked under the lock; any conflict
//     is a 409 and nothing is applied;
//  3. everything is applied in the same transaction, with history.
//
// A correlated result names a fetch request of this act; an unknown
// fetch_request_id is a 422 (errors.fetch_request_id): the act in the path
// exists, the payload refers to something that does not.
//
// Without fetch_request_id the write is an ordinary edit of current values:
// value only (error is a 422), source value and fetch state untouched,
// revision incremented when the value changes. It cannot slip past a
// conflict: it leaves the fetch state as it is, and because it increments
// the revision, a pending correlated result for that field is then refused
// with 409 "changed since the request".
func (s *Store) WriteData(ctx context.Context, p *auth.Principal, actUUID uuid.UUID, w DataWrite) (_ *WriteResult, err error) {
	defer apperr.Wrap(&err, "acts.WriteData(%s)", actUUID)
	var (
		out   *WriteResult
		wrote bool
	)
	err = s.DB.Tx(ctx, func(tx *gorm.DB) error {
		t, err := s.loadWriteTarget(ctx, tx, actUUID, &w)
		if err != nil {
			return err
		}
		now := s.now()
		items, err := validateItems(&w, t)
		if err != nil {
			return err
		}
		if t.req != nil {
			if err := checkStates(&w, items, t.req, now); err != nil {
				return err
			}
		}
		changed, err := applyItems(ctx, tx, p, t.act, t.req, items, now)
		if err != nil {
			return err
		}
		wrote = len(changed.values) > 0 || changed.fields
		out = &WriteResult{Data: make([]DataPoint, len(items))}
		ids := make([]int64, len(items))
		for i, it := range items {
			out.Data[i], ids[i] = *it.dp, it.dp.ID
		}
		if t.req != nil {
			out.FetchRequestID = &t.req.ID
		}
		if out.Fetch, err = latestFetch(ctx, tx, t.act.UUID, ids, now); err != nil {
			return err
		}
		return s.emitWrite(ctx, tx, t, out, changed, now)
	})
	if err == nil && !wrote {
		// Accepted again (an identical re-send, an edit to the value a
		// field has): the answer confirms stored state that a transaction
		// writing nothing read, so it waits until that state is durable.
		err = s.DB.WaitDurable(ctx)
	}
	return out, err
}

// writeTarget is what a write may touch, loaded and locked under the act's
// lock: the act, the named fetch request (nil for an ordinary edit) with its
// fields by data point id, and the data points the items can name.
type writeTarget struct {
	act    *Act
	req    *FetchRequest
	fields map[int64]*FetchField
	dps    []DataPoint
}

// loadWriteTarget locks the editable act and loads the rest of w's target.
// An unknown fetch request is a 422, an unknown data point of the single PUT
// a 404.
func (s *Store) loadWriteTarget(ctx context.Context, tx *gorm.DB, actUUID uuid.UUID, w *DataWrite) (*writeTarget, error) {
	a, err := LockEditable(ctx, s.DB, tx, actUUID)
	if err != nil {
		return nil, err
	}
	t := &writeTarget{act: a}
	if w.FetchRequestID != nil {
		var r FetchRequest
		res := tenant.Scope(ctx, tx).Where("id = ? AND act_uuid = ?", *w.FetchRequestID, a.UUID).Limit(1).Find(&r)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 0 {
			return nil, apperr.E(apperr.Unprocessable, "The data is invalid; nothing was applied.").
				WithField("fetch_request_id", "no fetch request with this id exists for the act")
		}
		t.req = &r
	}
	q := s.DB.ForUpdate(tenant.Scope(ctx, tx)).Where("act_uuid = ?", a.UUID)
	if w.single() {
		q = q.Where("id = ?", *w.DataID)
	}
	if err := q.Order("id").Find(&t.dps).Error; err != nil {
		return nil, fmt.Errorf("load data points: %w", err)
	}
	if w.single() && len(t.dps) == 0 {
		return nil, apperr.E(apperr.NotFound, "data point not found")
	}
	if t.req != nil {
		if t.fields, err = loadFetchFields(ctx, tx, t.req.ID, w.DataID); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// loadFetchFields returns request id's fields (only data point dataID's,
// when given) by data point id.
func loadFetchFields(ctx context.Context, tx *gorm.DB, id uuid.UUID, dataID *int64) (map[int64]*FetchField, error) {
	var fs []FetchField
	q := tenant.Scope(ctx, tx).Where("fetch_request_id = ?", id)
	if dataID != nil {
		q = q.Where("data_point_id = ?", *dataID)
	}
	if err := q.Find(&fs).Error; err != nil {
		return nil, fmt.Errorf("load request fields: %w", err)
	}
	out := make(map[int64]*FetchField, len(fs))
	for i := range fs {
		out[fs[i].DataPointID] = &fs[i]
	}
	return out, nil
}

// validateItems is step 1: every item is checked and every problem
// reported, as a 422, before anything is looked at under the conflict rules.
func validateItems(w *DataWrite, t *writeTarget) ([]resolved, error) {
	byID := make(map[int64]*DataPoint, len(t.dps))
	byTF := make(map[int64]*DataPoint, len(t.dps))
	byKey := make(map[string]*DataPoint, len(t.dps))
	for i := range t.dps {
		d := &t.dps[i]
		byID[d.ID], byTF[d.TemplateFieldID], byKey[d.Key] = d, d, d
	}
	fe := apperr.FieldErrors{}
	seen := make(map[int64]int, len(w.Items))
	out := make([]resolved, len(w.Items))
	for i, it := range w.Items {
		var d *DataPoint
		if w.single() {
			d = byID[*w.DataID]
		} else {
			d = resolveItem(w, i, it, byID, byTF, byKey, fe)
		}
		checkShape(w, i, it, t.req != nil, fe)
		if d == nil {
			continue
		}
		if j, dup := seen[d.ID]; dup {
			fe.Add(w.key(i, ""), fmt.Sprintf("%s (%s)", msgDuplicate, w.key(j, "")))
			continue
		}
		seen[d.ID] = i
		r := resolved{dp: d, err: it.Error, apply: true}
		if t.req != nil {
			f, ok := t.fields[d.ID]
			if !ok || !f.External {
				fe.Add(w.key(i, ""), fmt.Sprintf("data point %d (%s) %s", d.ID, d.Key, msgNotInSet))
				continue
			}
			r.field = f
		}
		if it.Value != nil {
			v, ok, err := normalizeValue(w, i, d, *it.Value, fe)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			r.value = &v
		}
		out[i] = r
	}
	if err := fe.Err(apperr.Unprocessable, "The data is invalid; nothing was applied."); err != nil {
		return nil, err
	}
	return out, nil
}

// checkShape reports an item that does not carry exactly one of value and
// error, or carries an error it may not (without a fetch request) or of the
// wrong length.
func checkShape(w *DataWrite, i int, it DataItem, correlated bool, fe apperr.FieldErrors) {
	switch {
	case (it.Value == nil) == (it.Error == nil):
		fe.Add(w.key(i, "value"), msgExactlyOne)
	case it.Error != nil && !correlated:
		fe.Add(w.key(i, "error"), msgErrorNeedsFR)
	case it.Error != nil && utf8.RuneCountInString(*it.Error) > MaxErrorLength:
		fe.Add(w.key(i, "error"), fmt.Sprintf("must be at most %d characters", MaxErrorLength))
	case it.Error != nil && *it.Error == "":
		fe.Add(w.key(i, "error"), msgErrorEmpty)
	}
}

// normalizeValue normalizes item i's value for data point d. A value the
// field cannot hold is reported in fe (ok false); an error is a broken
// snapshot, not bad input.
func normalizeValue(w *DataWrite, i int, d *DataPoint, value string, fe apperr.FieldErrors) (_ string, ok bool, _ error) {
	opts, err := d.FieldOptions()
	if err != nil {
		return "", false, err
	}
	v, err := fieldtype.Normalize(d.Type, opts, value)
	var ve *fieldtype.ValueError
	switch {
	case errors.As(err, &ve):
		fe.Add(w.key(i, "value"), ve.Error())
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("data point %d has an invalid definition: %w", d.ID, err)
	}
	return v, true, nil
}

// resolveItem finds the data point a bulk item names. Several identifiers
// must agree.
func resolveItem(w *DataWrite, i int, it DataItem, byID, byTF map[int64]*DataPoint, byKey map[string]*DataPoint, fe apperr.FieldErrors) *DataPoint {
	var found *DataPoint
	named := false
	try := func(attr string, d *DataPoint, ok bool, what string) bool {
		named = true
		if !ok {
			fe.Add(w.key(i, attr), fmt.Sprintf("the act has no data point with %s", what))
			return false
		}
		if found != nil && found.ID != d.ID {
			fe.Add(w.key(i, ""), "id, template_field_id and template_field_key name different data points")
			return false
		}
		found = d
		return true
	}
	if it.ID != nil {
		d, ok := byID[*it.ID]
		if !try("id", d, ok, fmt.Sprintf("id %d", *it.ID)) {
			return nil
		}
	}
	if it.TemplateFieldID != nil {
		d, ok := byTF[*it.TemplateFieldID]
		if !try("template_field_id", d, ok, fmt.Sprintf("template_field_id %d", *it.TemplateFieldID)) {
			return nil
		}
	}
	if it.TemplateFieldKey != nil {
		d, ok := byKey[*it.TemplateFieldKey]
		if !try("template_field_key", d, ok, fmt.Sprintf("template_field_key %q", *it.TemplateFieldKey)) {
			return nil
		}
	}
	if !named {
		fe.Add(w.key(i, ""), "name the data point by id, template_field_id or template_field_key")
	}
	return found
}

// checkStates is step 2 (the contract's table of field moves), under the act's lock.
// An identical re-send of an accepted value or a reported error is accepted
// again without change, whatever happened since (that is what makes it
// idempotent for an integration retrying after a lost response). Anything
// else needs the field to be awaiting, the request unexpired and the field
// unchanged since the request.
func checkStates(w *DataWrite, items []resolved, req *FetchRequest, now time.Time) error {
	fe := apperr.FieldErrors{}
	for i := range items {
		msg, err := items[i].conflict(req, now)
		if err != nil {
			return err
		}
		if msg != "" {
			fe.Add(w.key(i, ""), msg)
		}
	}
	if len(fe) == 0 {
		return nil
	}
	return (&apperr.Error{Kind: apperr.Conflict, Message: "The result conflicts with the state of the fetch request; nothing was applied.",
		Fields: fe}).WithCode(apperr.CodeFetchConflict)
}

// conflict says why the correlated item cannot be applied to its field of
// req at now ("" when it can), and marks an identical re-send as nothing to
// apply.
func (it *resolved) conflict(req *FetchRequest, now time.Time) (string, error) {
	f := it.field
	switch f.State {
	case FetchAccepted:
		switch {
		case it.value != nil && f.ResultValue != nil && *it.value == *f.ResultValue:
			it.apply = false
		case it.value != nil:
			return msgOtherValue, nil
		default:
			return msgValueTaken, nil
		}
	case FetchFailed:
		if it.err == nil || f.Error == nil || *it.err != *f.Error {
			return msgErrorTaken, nil
		}
		it.apply = false
	case FetchSuperseded:
		return msgSuperseded, nil
	case FetchAwaiting:
		switch {
		case req.Expired(now):
			return fmt.Sprintf("%s at %s", msgExpired, req.ExpiresAt.UTC().Format(time.RFC3339)), nil
		case it.dp.Revision != f.RevisionSnapshot:
			return fmt.Sprintf("%s (revision %d, the request saw %d)", msgChanged, it.dp.Revision, f.RevisionSnapshot), nil
		}
	default:
		return "", fmt.Errorf("acts: field %d of request %s has unknown state %q", f.DataPointID, req.ID, f.State)
	}
	return "", nil
}

// applyItems is step 3: one UPDATE of the data points, one of the request's
// fields, one of the act, and the history in one batch. It returns the
// change: the data points whose value it wrote and whether it changed a
// field of the request.
func applyItems(ctx context.Context, tx *gorm.DB, p *auth.Principal, a *Act, req *FetchRequest, items []resolved, now time.Time) (applied, error) {
	var (
		dw   []dpWrite
		fw   []fieldWrite
		hist []HistoryEntry
	)
	actor := UserActor(p)
	var rid *uuid.UUID
	if req != nil {
		actor, rid = AppActor(p), &req.ID
	}
	for i := range items {
		it := &items[i]
		if !it.apply {
			continue
		}
		d := it.dp
		switch {
		case req != nil && it.value != nil:
			dw = append(dw, dpWrite{ID: d.ID, Value: it.value, SetSource: true, Bump: true})
			fw = append(fw, fieldWrite{DataPointID: d.ID, State: FetchAccepted, ResultValue: it.value})
			hist = append(hist, HistoryEntry{ActUUID: a.UUID, Kind: KindValueAccepted, DataPointID: &d.ID,
				FetchRequestID: rid, OldValue: d.Value, NewValue: it.value})
			d.Value, d.SourceValue = it.value, it.value
			d.Revision++
			d.UpdatedAt = now
		case req != nil:
			fw = append(fw, fieldWrite{DataPointID: d.ID, State: FetchFailed, Error: it.err})
			hist = append(hist, HistoryEntry{ActUUID: a.UUID, Kind: KindFetchFailed, DataPointID: &d.ID,
				FetchRequestID: rid, Error: it.err})
		default:
			if d.Value != nil && *d.Value == *it.value {
				continue // an edit to the same value changes nothing
			}
			dw = append(dw, dpWrite{ID: d.ID, Value: it.value, Bump: true})
			hist = append(hist, HistoryEntry{ActUUID: a.UUID, Kind: KindValueEdited, DataPointID: &d.ID,
				OldValue: d.Value, NewValue: it.value})
			d.Value = it.value
			d.Revision++
			d.UpdatedAt = now
		}
	}
	if len(hist) == 0 {
		return applied{}, nil
	}
	ch := applied{fields: len(fw) > 0}
	for _, w := range dw {
		ch.values = append(ch.values, w.ID)
	}
	if err := updateDataPoints(ctx, tx, dw, now); err != nil {
		return ch, err
	}
	if req != nil {
		if err := updateFields(ctx, tx, req.ID, fw, now); err != nil {
			return ch, err
		}
	}
	if len(dw) > 0 {
		// The act's own updated_at is a sync stamp (db.Stamp), at or just
		// after now; the data points and history keep now.
		touched, err := db.Stamp(tx, a.TenantID, StampList, now)
		if err != nil {
			return ch, err
		}
		if err := tenant.Scope(ctx, tx.Model(&Act{})).Where("uuid = ?", a.UUID).
			Update("updated_at", touched).Error; err != nil {
			return ch, fmt.Errorf("touch act: %w", err)
		}
		a.UpdatedAt = touched
	}
	return ch, Record(ctx, tx, actor, now, hist...)
}

// applied is what applyItems changed.
type applied struct {
	values []int64 // data points whose value was written
	fields bool    // some field of the fetch request changed state
}

// emitWrite is the event step of WriteData: act.data_updated for the values
// written, and fetch_request.completed when the write answered the last
// awaiting field of its request, emitted together.
func (s *Store) emitWrite(ctx context.Context, tx *gorm.DB, t *writeTarget, out *WriteResult, ch applied, now time.Time) error {
	var rid *uuid.UUID
	if t.req != nil {
		rid = &t.req.ID
	}
	updated, err := dataUpdated(ctx, tx, t.act.UUID, rid, out.Data, ch.values, out.Fetch, now)
	if err != nil {
		return err
	}
	var done *outbox.Event
	if t.req != nil && ch.fields {
		v, err := requestView(ctx, tx, t.req, now)
		if err != nil {
			return err
		}
		done = completed(v, now)
	}
	return s.emitBoth(ctx, tx, updated, done)
}
