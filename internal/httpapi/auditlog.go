package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/page"
)

// The audit log API (admins, audit:read): a page of records, or every
// record as JSON Lines.

// ListAuditLog is GET /audit-log.
func (h *Handlers) ListAuditLog(ctx context.Context, req apiserver.ListAuditLogRequestObject) (apiserver.ListAuditLogResponseObject, error) {
	p := req.Params
	pg, err := page.New(nil, p.Limit)
	if err != nil {
		return nil, err
	}
	f := auditFilter(p.ActorUserId, p.ActorApp, p.Action, p.TargetType, p.TargetId, p.CreatedAfter, p.CreatedBefore)
	f.After, f.Before, f.Limit = p.StartingAfter, p.EndingBefore, pg.Limit
	rows, more, err := h.svc.Audit.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := apiserver.ListAuditLog200JSONResponse{Data: make([]models.AuditRecord, len(rows)), HasMore: more}
	for i := range rows {
		out.Data[i] = auditView(&rows[i])
	}
	return out, nil
}

// ExportAuditLog is GET /audit-log/export: the records stream as they are
// read, oldest first; an error after the first line ends the body early
// (the status is already sent), which a reader sees as a truncated line.
func (h *Handlers) ExportAuditLog(ctx context.Context, req apiserver.ExportAuditLogRequestObject) (apiserver.ExportAuditLogResponseObject, error) {
	p := req.Params
	f := auditFilter(p.ActorUserId, p.ActorApp, p.Action, p.TargetType, p.TargetId, p.CreatedAfter, p.CreatedBefore)
	// One cheap read before the 200 goes out: a database that cannot
	// answer is a 503 in the error format, not an empty export.
	if _, _, err := h.svc.Audit.List(ctx, audit.Filter{Limit: 1}); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		enc := json.NewEncoder(pw)
		pw.CloseWithError(h.svc.Audit.Export(ctx, f, func(r audit.Row) error { return enc.Encode(auditView(&r)) }))
	}()
	return apiserver.ExportAuditLog200ApplicationxNdjsonResponse{Body: pr}, nil
}

func auditFilter(actor *int64, app, action, targetType, targetID *string, from, until *time.Time) audit.Filter {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return audit.Filter{ActorUserID: actor, ActorApp: s(app), Action: s(action), TargetType: s(targetType),
		TargetID: s(targetID), From: from, Until: until}
}

func auditView(r *audit.Row) models.AuditRecord {
	return models.AuditRecord{
		Id: r.ID, OccurredAt: r.OccurredAt.UTC(),
		Actor:         models.AuditActor{Type: r.ActorType, UserId: r.ActorUserID, App: r.ActorClientID},
		SourceAddress: r.SourceAddr, UserAgent: r.UserAgent, Action: r.Action,
		Target:  models.AuditTarget{Type: r.TargetType, Id: r.TargetID},
		Outcome: r.Outcome, RequestId: r.RequestID,
	}
}
