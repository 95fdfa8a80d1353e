package acts

import (
	"encoding/json"
	"fmt"

	"github.com/finsvc/finsvc/gen/models"
)

// The API shapes live here rather than in the HTTP layer because event
// payloads (act.created, act.duplicated, act.fetch_data) carry the same
// shapes and are built inside the store's transaction.

// APIOptions decodes a snapshotted options JSON into the API's FieldOptions
// (nil stays nil, which is JSON null).
func APIOptions(raw *string) (*models.FieldOptions, error) {
	if raw == nil || *raw == "" || *raw == "null" {
		return nil, nil
	}
	var o models.FieldOptions
	if err := json.Unmarshal([]byte(*raw), &o); err != nil {
		return nil, fmt.Errorf("acts: decode field options: %w", err)
	}
	return &o, nil
}

func optionsKey(raw *string) string {
	if raw == nil {
		return ""
	}
	return *raw
}

// APIDataPoint renders d with its most recent fetch f (nil for none).
func APIDataPoint(d *DataPoint, f *FetchState) (models.DataPoint, error) {
	return apiDataPoint(d, f, nil)
}

// apiDataPoint is APIDataPoint with decoded options shared by their text
// (memo, when not nil): an act's fields often repeat the same options, and
// decoding them was a tenth of GET /acts/{uuid}'s CPU. The shared values
// are only encoded, never changed.
func apiDataPoint(d *DataPoint, f *FetchState, memo map[string]*models.FieldOptions) (models.DataPoint, error) {
	key := optionsKey(d.Options)
	opts, ok := memo[key] // a nil memo has nothing
	if !ok {
		var err error
		if opts, err = APIOptions(d.Options); err != nil {
			return models.DataPoint{}, err
		}
		if memo != nil {
			memo[key] = opts
		}
	}
	out := models.DataPoint{
		Id:                d.ID,
		TemplateFieldId:   d.TemplateFieldID,
		TemplateFieldKey:  d.Key,
		TemplateFieldName: d.Name,
		Type:              models.FieldType(d.Type),
		ExternalDataField: d.External(),
		Source:            models.FieldSource(d.Source),
		Options:           opts,
		Value:             d.Value,
		SourceValue:       d.SourceValue,
		Revision:          d.Revision,
		UpdatedAt:         d.UpdatedAt.UTC(),
	}
	if f != nil {
		out.Fetch = &models.DataPointFetch{
			FetchRequestId: f.FetchRequestID,
			State:          models.FieldFetchState(f.State),
			Error:          f.Error,
			ExpiresAt:      f.ExpiresAt.UTC(),
		}
	}
	return out, nil
}

// APISummary renders an act without data points.
func APISummary(a *Act) models.ActSummary {
	return models.ActSummary{
		Uuid: a.UUID, ClientId: a.ClientID, TemplateId: a.TemplateID, Title: a.Title,
		Status: models.ActStatus(a.Status), CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC(),
	}
}

// API renders the act with its data points.
func (d *Detail) API() (models.Act, error) {
	s := APISummary(&d.Act)
	out := models.Act{
		Uuid: s.Uuid, ClientId: s.ClientId, TemplateId: s.TemplateId, Title: s.Title,
		Status: s.Status, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Data: make([]models.DataPoint, 0, len(d.Data)),
	}
	memo := map[string]*models.FieldOptions{}
	for i := range d.Data {
		dp, err := apiDataPoint(&d.Data[i], d.Fetch[d.Data[i].ID], memo)
		if err != nil {
			return models.Act{}, err
		}
		out.Data = append(out.Data, dp)
	}
	return out, nil
}

// APIHistory renders a history entry.
func APIHistory(h *HistoryEntry) models.HistoryEntry {
	return models.HistoryEntry{
		Id: h.ID, At: h.At.UTC(),
		Actor:       models.Actor{Type: models.ActorType(h.ActorType), Id: h.ActorID, UserId: h.ActorUserID},
		Kind:        models.HistoryKind(h.Kind),
		DataPointId: h.DataPointID, FetchRequestId: h.FetchRequestID,
		OldValue: h.OldValue, NewValue: h.NewValue, Error: h.Error,
	}
}
