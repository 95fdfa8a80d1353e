package console

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/web"
)

// auditPageSize is how many records the console's audit page shows.
const auditPageSize = 50

type auditPage struct {
	Records []audit.Row
	// The filters as typed (the form shows them again).
	Actor, Action, TargetType, TargetID, From, Until string
	// Older is the query of the next page back, "" on the last.
	Older template.URL
}

// auditLabels name the filters as the form labels them, for the banner's
// sentences ("The actor must be a user id.", not the query parameter).
var auditLabels = map[string]string{
	"actor_user_id": "The actor", "created_after": "From", "created_before": "Until", "starting_after": "The page",
}

// auditLog is the audit page (admins, as GET /audit-log): the same filters
// as the API, newest first, paged back by record id.
func (cs *Console) auditLog(r *req) error {
	if err := cs.permitOr403(r, auth.OpListAuditLog); err != nil {
		return err
	}
	q := func(k string) string { return strings.TrimSpace(r.QueryParam(k)) }
	p := &auditPage{Actor: q("actor_user_id"), Action: q("action"), TargetType: q("target_type"), TargetID: q("target_id"),
		From: q("created_after"), Until: q("created_before")}
	f := audit.Filter{Action: p.Action, TargetType: p.TargetType, TargetID: p.TargetID, Limit: auditPageSize}
	fe := apperr.FieldErrors{}
	if p.Actor != "" {
		id, err := strconv.ParseInt(p.Actor, 10, 64)
		if err != nil {
			fe.Add("actor_user_id", "must be a user id")
		}
		f.ActorUserID = &id
	}
	for _, t := range []struct {
		v   string
		dst **time.Time
		key string
	}{{p.From, &f.From, "created_after"}, {p.Until, &f.Until, "created_before"}} {
		if t.v == "" {
			continue
		}
		v, err := time.Parse("2006-01-02T15:04", t.v)
		if err != nil {
			if v, err = time.Parse(time.RFC3339, t.v); err != nil {
				fe.Add(t.key, "must be a date and time")
				continue
			}
		}
		*t.dst = &v
	}
	if after := q("starting_after"); after != "" {
		id, err := strconv.ParseInt(after, 10, 64)
		if err != nil {
			fe.Add("starting_after", "must be a record id")
		}
		f.After = &id
	}
	msg := ""
	if err := fe.Err(apperr.Invalid, "The filters are invalid."); err != nil {
		msg, f = web.DescribeLabelled(err, auditLabels), audit.Filter{Limit: auditPageSize}
	}
	rows, more, err := cs.d.Audit.List(r.Request().Context(), f)
	if err != nil {
		return err
	}
	p.Records = rows
	if more && len(rows) > 0 {
		v := url.Values{}
		for k, s := range map[string]string{"actor_user_id": p.Actor, "action": p.Action, "target_type": p.TargetType,
			"target_id": p.TargetID, "created_after": p.From, "created_before": p.Until} {
			if s != "" {
				v.Set(k, s)
			}
		}
		v.Set("starting_after", strconv.FormatInt(rows[len(rows)-1].ID, 10))
		p.Older = template.URL(v.Encode())
	}
	return cs.show(r, "audit", &view{Layout: web.Layout{Title: "Audit log", Nav: "audit", Message: msg}, Page: p})
}
