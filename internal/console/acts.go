package console

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/web"
)

// historyShown bounds the history entries on the page (the API pages
// through more).
const historyShown = page.MaxLimit

type fieldRow struct {
	acts.DataPoint
	Fetch *acts.FetchState
	// SourceWords is the source in words ("External data").
	SourceWords string
}

type requestView struct {
	*acts.FetchView
	Names map[int64]string
}

// historyRow is a history entry with the name of its field, what it
// records in words and who made it by name.
type historyRow struct {
	acts.HistoryEntry
	Field, What, Actor string
}

type actPage struct {
	Act      acts.Act
	Fields   []fieldRow
	Requests []requestView
	History  []historyRow
	More     int64 // history entries not shown
	Names    map[int64]string
}

// actsPage is the acts list: the filters as typed, the page, and where
// the next one starts.
type actsPage struct {
	Q, Status, Template, Client string
	// ClientName names the client filter (a link from a row sets it).
	ClientName string
	Templates  []templates.Template
	Acts       []acts.Listed
	Errors     fieldErrors
	// Older is the query of the next (older) page, "" on the last.
	Older template.URL
	// SearchedDown: the search stopped at this act number (acts.SearchWindow).
	SearchedDown int64
	Filtered     bool
	// Filters is the query of the valid filters; AllClients the same
	// without the client; Paged is set past the first page.
	Filters, AllClients template.URL
	Paged               bool
}

// templatesShown bounds the template choices of the filter.
const templatesShown = page.MaxLimit

// actsList lists the tenant's acts, newest first, with a search (title,
// client name) and filters (status, template, client), paged by cursor
// (acts.Store.Browse). ?uuid= still opens an act by its UUID. A bad
// filter is a sentence beside its field and is left out of the list.
func (cs *Console) actsList(r *req) error {
	if err := cs.permitOr403(r, auth.OpGetFetchRequest); err != nil {
		return err
	}
	ctx := r.Request().Context()
	if q := strings.TrimSpace(r.QueryParam("uuid")); q != "" {
		id, err := uuid.Parse(q)
		if err == nil {
			return r.Redirect(http.StatusSeeOther, "/console/acts/"+id.String())
		}
	}
	p := &actsPage{Errors: fieldErrors{}}
	b := p.readFilters(r)
	if err := cs.chooseClient(ctx, p, &b); err != nil {
		return err
	}
	tpls, _, err := cs.d.Acts.Templates.List(ctx, templates.Filter{}, page.Request{Page: 1, Limit: templatesShown})
	if err != nil {
		return err
	}
	p.Templates = tpls
	res, err := cs.d.Acts.Browse(ctx, b)
	if err != nil {
		return err
	}
	p.Acts, p.SearchedDown = res.Acts, res.SearchedDown
	p.Filtered = b.Query != "" || b.Status != nil || b.TemplateID != nil || b.ClientID != nil
	p.link(b, res.Next)
	msg := ""
	if len(p.Errors) > 0 {
		msg = "Part of what you asked for was left out: see the message beside it."
	}
	return cs.show(r, "acts", &view{Layout: web.Layout{Title: "Acts", Nav: "acts", Message: msg}, Page: p})
}

// readFilters reads the search and the filters of r into p and returns the
// browse they ask for; a bad one is a sentence in p.Errors and is left
// out.
func (p *actsPage) readFilters(r *req) acts.Browse {
	get := func(k string) string { return strings.TrimSpace(r.QueryParam(k)) }
	p.Q, p.Status, p.Template, p.Client = get("q"), get("status"), get("template"), get("client")
	b := acts.Browse{Query: p.Q}
	if get("uuid") != "" {
		p.Errors["uuid"] = "This is not an act UUID: it looks like 0b7d5f9e-3c1a-4d2b-9e8f-1a2b3c4d5e6f."
	}
	if p.Status != "" {
		st := acts.Status(p.Status)
		if st != acts.StatusDraft && st != acts.StatusFinal {
			p.Errors["status"] = "Choose draft or final."
		} else {
			b.Status = &st
		}
	}
	b.TemplateID = p.number("template", p.Template, "Choose a template from the list.")
	b.ClientID = p.number("client", p.Client, "A client is chosen by its number, from the client's name in the list.")
	if v := get("before"); v != "" {
		if n := p.number("before", v, "This page link is broken: start again from the first page."); n != nil {
			b.Before = *n
		}
	}
	if err := acts.CheckQuery(p.Q); err != nil {
		p.Errors["q"] = "Search for at most 200 characters."
		b.Query = ""
	}
	return b
}

// number reads v as a positive number; nil when v is empty, or bad (then
// msg is field's error).
func (p *actsPage) number(field, v, msg string) *int64 {
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		p.Errors[field] = msg
		return nil
	}
	return &n
}

// chooseClient names the client b filters on, or drops the filter when
// there is no such client.
func (cs *Console) chooseClient(ctx context.Context, p *actsPage, b *acts.Browse) error {
	if b.ClientID == nil {
		return nil
	}
	c, err := cs.d.Acts.Clients.Get(ctx, *b.ClientID)
	switch {
	case apperr.Is(err, apperr.NotFound):
		p.Errors["client"] = "There is no such client."
		b.ClientID = nil
	case err != nil:
		return err
	default:
		p.ClientName = c.CompanyName
	}
	return nil
}

// link sets the page's links: the valid filters, the same without the
// client, and the next (older) page when next is set.
func (p *actsPage) link(b acts.Browse, next int64) {
	v := url.Values{}
	for k, s := range map[string]string{"q": b.Query, "status": p.Status, "template": p.Template, "client": p.Client} {
		if s != "" && p.Errors[k] == "" {
			v.Set(k, s)
		}
	}
	// Encoded here, so the pages' links take them as they are.
	p.Filters, p.Paged = template.URL(v.Encode()), b.Before > 0
	v.Del("client")
	p.AllClients = template.URL(v.Encode())
	if next > 0 {
		v.Set("client", p.Client)
		if p.Client == "" || p.Errors["client"] != "" {
			v.Del("client")
		}
		v.Set("before", strconv.FormatInt(next, 10))
		p.Older = template.URL(v.Encode())
	}
}

// act shows an act's fetch requests: each field's latest state, each
// request with its fields' states (awaiting, accepted, failed, expired,
// superseded, as the API derives them), and the act's history.
func (cs *Console) act(r *req) error {
	if err := cs.permitOr403(r, auth.OpGetFetchRequest); err != nil {
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
		p.Fields = append(p.Fields, fieldRow{DataPoint: dp, Fetch: d.Fetch[dp.ID], SourceWords: sourceWordsOf(dp.Source)})
		p.Names[dp.ID] = dp.Name
	}
	names := cs.actorNames()
	for _, h := range hist {
		row := historyRow{HistoryEntry: h, What: kindWords(h.Kind)}
		if h.DataPointID != nil {
			row.Field = p.Names[*h.DataPointID]
		}
		if row.Actor, err = names.of(ctx, &h); err != nil {
			return err
		}
		p.History = append(p.History, row)
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
