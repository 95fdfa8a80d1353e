package webui

import (
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/web"
)

// historyShown bounds the history entries on the page (the API pages
// through more).
const historyShown = page.MaxLimit

type fieldRow struct {
	acts.DataPoint
	Fetch *acts.FetchState
}

type requestView struct {
	*acts.FetchView
	Names map[int64]string
}

// historyRow is a history entry with the name of its field.
type historyRow struct {
	acts.HistoryEntry
	Field string
}

type actPage struct {
	Act      acts.Act
	Fields   []fieldRow
	Requests []requestView
	History  []historyRow
	More     int64 // history entries not shown
	Names    map[int64]string
}

// actsLookup is the form that opens an act's fetch requests by its UUID.
func (cs *Console) actsLookup(r *req) error {
	if q := strings.TrimSpace(r.QueryParam("uuid")); q != "" {
		id, err := uuid.Parse(q)
		if err != nil {
			return cs.show(r, "acts", &view{Layout: web.Layout{Title: "Acts", Nav: "acts", Message: "uuid: not an act UUID (like 0b7d…-…)"}})
		}
		return r.Redirect(http.StatusSeeOther, "/console/acts/"+id.String())
	}
	return cs.show(r, "acts", &view{Layout: web.Layout{Title: "Acts", Nav: "acts"}})
}

// act shows an act's fetch requests: each field's latest state, each
// request with its fields' states (awaiting, accepted, failed, expired,
// superseded, as the API derives them), and the act's history.
func (cs *Console) act(r *req) error {
	if err := cs.permitOr403(r, "getFetchRequest"); err != nil {
		return err
	}
	id, err := uuid.Parse(r.Param("uuid"))
	if err != nil {
		return apperr.E(apperr.NotFound, "no such act")
	}
	ctx := r.Request().Context()
	d, err := cs.d.Acts.Get(ctx, id)
	if err != nil {
		return err
	}
	hist, total, err := cs.d.Acts.History(ctx, id, page.Request{Page: 1, Limit: historyShown})
	if err != nil {
		return err
	}
	p := &actPage{Act: d.Act, More: total - int64(len(hist)), Names: map[int64]string{}}
	for _, dp := range d.Data {
		p.Fields = append(p.Fields, fieldRow{DataPoint: dp, Fetch: d.Fetch[dp.ID]})
		p.Names[dp.ID] = dp.Name
	}
	for _, h := range hist {
		r := historyRow{HistoryEntry: h}
		if h.DataPointID != nil {
			r.Field = p.Names[*h.DataPointID]
		}
		p.History = append(p.History, r)
	}
	// The requests the history names, newest first, each read as the API
	// reads it (GetRequest derives expiry).
	var ids []uuid.UUID
	for i := len(hist) - 1; i >= 0; i-- {
		if fr := hist[i].FetchRequestID; fr != nil && !slices.Contains(ids, *fr) {
			ids = append(ids, *fr)
		}
	}
	for _, fr := range ids {
		v, err := cs.d.Acts.GetRequest(ctx, id, fr)
		if apperr.Is(err, apperr.NotFound) {
			continue // purged after it expired (acts.PurgeFetchRequests)
		}
		if err != nil {
			return err
		}
		p.Requests = append(p.Requests, requestView{FetchView: v, Names: p.Names})
	}
	return cs.show(r, "act", &view{Layout: web.Layout{Title: "Act " + id.String(), Nav: "acts"}, Page: p})
}
