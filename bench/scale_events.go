package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/janitor"
)

// scaleEventKinds are the kinds the seeded events cycle through (kind g %
// 8): a filter by one of them matches an eighth of the events.
var scaleEventKinds = []string{"client.created", "client.updated", "client.deleted", "act.created",
	"act.updated", "act.finalized", "act.data_updated", "fetch_request.completed"}

// scaleAuditActions are the actions the seeded audit records cycle through
// (action g % 20): a filter by one matches a twentieth of the records.
var scaleAuditActions = []string{"auth.sign_in", "user.created", "user.role_changed", "user.deactivated",
	"user.reactivated", "user.password_set", "user.password_changed", "user.one_time_password_issued",
	"webhook.created", "webhook.updated", "webhook.disabled", "webhook.deleted", "webhook.secret_rotated",
	"app.created", "app.secret_rotated", "app.secret_overlap_ended", "app.deleted", "consent.granted",
	"consent.revoked", "token.revoked"}

// scaleUsers is how many users the seeded audit records' actors cycle
// through (actor g % 50 + 1).
const scaleUsers = 50

// runScaleEvents is `go run ./bench -scale -only events`: one tenant's
// events and audit log grown through 10k, 100k and 1M rows each, measuring
// GET /events and GET /audit-log at each size through the full server: the
// first page, a deep page by cursor (the row 90% of the way back from the
// newest), and a filtered first and deep page. The rows are written as the
// other lists' are (INSERT … SELECT over a series, then ANALYZE on
// PostgreSQL, the statistics janitor's run on SQLite), numbered as the
// service numbers them (events.seq, the audit record ids), one a second.
func runScaleEvents(ctx context.Context, o options, out io.Writer) error {
	e, err := serveFresh(ctx, o.databaseURL, true, false)
	if err != nil {
		return err
	}
	defer e.Close()
	d := e.DB
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true}}
	// The seeded rows end before now and start within the events'
	// retention (30 days): one a second, 1M of them span 11.6 days.
	start := time.Now().UTC().Add(-20 * 24 * time.Hour).Truncate(time.Second)
	// The sign-in wrote audit records (and the service may have written
	// events): the seeded rows are numbered after them.
	var evOff, auOff int64
	if err := d.Raw(`SELECT COALESCE(max(seq), 0) FROM events WHERE tenant_id = ?`, e.Tenant.ID).Scan(&evOff).Error; err != nil {
		return err
	}
	if err := d.Raw(`SELECT COALESCE(max(id), 0) FROM audit_log WHERE tenant_id = ?`, e.Tenant.ID).Scan(&auOff).Error; err != nil {
		return err
	}
	var seeded strings.Builder
	fmt.Fprintf(out, "| rows | request | p50 | p99 |\n|---:|---|---:|---:|\n")
	have := 0
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		if size > o.scaleMax {
			break
		}
		t0 := time.Now()
		if err := seedEventsAndAudit(d, e.Tenant.ID, start, evOff, auOff, have, size); err != nil {
			return fmt.Errorf("seed %d: %w", size, err)
		}
		have = size
		line := fmt.Sprintf("seeded %d events and %d audit records (%s) in %s\n", size, size, d.Dialect, time.Since(t0).Round(time.Second))
		fmt.Fprint(os.Stderr, line)
		seeded.WriteString("- " + line)
		deep := size / 10 // 90% of the way back from the newest
		var deepEvent, deepKindEvent string
		if err := d.Raw(`SELECT id FROM events WHERE tenant_id = ? AND seq = ?`, e.Tenant.ID, evOff+int64(deep)).Scan(&deepEvent).Error; err != nil {
			return err
		}
		// The deep cursor of the filtered list is an event of its kind.
		kind := scaleEventKinds[1]
		if err := d.Raw(`SELECT id FROM events WHERE tenant_id = ? AND seq = ?`, e.Tenant.ID, evOff+int64(deep-deep%8+1)).Scan(&deepKindEvent).Error; err != nil {
			return err
		}
		action := scaleAuditActions[2]
		reqs := []struct{ name, path string }{
			{"events page 1", "/api/1.0/events?limit=25"},
			{"events deep (starting_after the row 90% back)", "/api/1.0/events?limit=25&starting_after=" + deepEvent},
			{"events?type=" + kind + " page 1", "/api/1.0/events?limit=25&type=" + kind},
			{"events?type=" + kind + " deep (row 90% back)", "/api/1.0/events?limit=25&type=" + kind + "&starting_after=" + deepKindEvent},
			{"events?created_before=(the row 90% back) page 1", "/api/1.0/events?limit=25&created_before=" +
				url.QueryEscape(start.Add(time.Duration(deep)*time.Second).Format(time.RFC3339))},
			{"audit-log page 1", "/api/1.0/audit-log?limit=25"},
			{"audit-log deep (starting_after the row 90% back)", fmt.Sprintf("/api/1.0/audit-log?limit=25&starting_after=%d", auOff+int64(deep))},
			{"audit-log?action=" + action + " page 1", "/api/1.0/audit-log?limit=25&action=" + action},
			{"audit-log?action=" + action + " deep (row 90% back)", fmt.Sprintf("/api/1.0/audit-log?limit=25&action=%s&starting_after=%d", action, auOff+int64(deep))},
			{"audit-log?actor_user_id=7 page 1", "/api/1.0/audit-log?limit=25&actor_user_id=7"},
			{"audit-log?created_before=(the row 90% back) page 1", "/api/1.0/audit-log?limit=25&created_before=" +
				url.QueryEscape(start.Add(time.Duration(deep)*time.Second).Format(time.RFC3339))},
		}
		for _, r := range reqs {
			stopProfile, err := scaleProfile(o, r.name)
			if err != nil {
				return err
			}
			lat, err := measure(ctx, client, e.FullURL+r.path, e.host(), e.Token, o.scaleN)
			stopProfile()
			if err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			fmt.Fprintf(out, "| %d | %s | %s | %s |\n", size, r.name, ms(Percentile(lat, 50)), ms(Percentile(lat, 99)))
		}
	}
	fmt.Fprint(out, "\nSeeding (INSERT … SELECT, then ANALYZE on PostgreSQL, the statistics janitor's PRAGMA optimize on SQLite):\n\n"+seeded.String())
	return nil
}

// seedEventsAndAudit grows tenant tid's events and audit records from have
// to want each: event g is kind g % 8, numbered evOff + g (events.seq), at
// start + g seconds; record evOff + g is action g % 20 by user g % 50 + 1,
// on webhook g % 1000, at the same time. The sequences continue after
// them.
func seedEventsAndAudit(d *db.DB, tid int64, start time.Time, evOff, auOff int64, have, want int) error {
	sqlite := d.Dialect == db.SQLite
	cast := "::bigint"
	id := `(substr(md5('ev' || g), 1, 12) || '4' || substr(md5('ev' || g), 14, 3) || '8' || substr(md5('ev' || g), 18, 15))::uuid`
	at := `?::timestamptz + g * interval '1 second'`
	pick := func(names []string) string {
		return `(ARRAY['` + strings.Join(names, `','`) + `'])[1 + g % ` + fmt.Sprint(len(names)) + `]`
	}
	if sqlite {
		cast = ""
		id = `printf('%08x-0000-4000-9000-%012x', g, g)`
		at = `strftime('%Y-%m-%d %H:%M:%S+00:00', ?, '+' || g || ' seconds')`
		pick = func(names []string) string {
			c := "CASE g % " + fmt.Sprint(len(names))
			for i, n := range names {
				c += fmt.Sprintf(" WHEN %d THEN '%s'", i, n)
			}
			return c + " END"
		}
	}
	startArg := any(start)
	if sqlite {
		startArg = start.Format("2006-01-02 15:04:05")
	}
	exec := func(sql string, args ...any) error { return d.Exec(sql, args...).Error }
	if err := exec(`INSERT INTO events (tenant_id, id, kind, payload, occurred_at, seq)
		SELECT ?, `+id+`, `+pick(scaleEventKinds)+`, '{"n":' || g || '}', `+at+`, g + ?
		FROM `+series(sqlite, "?"+cast+" + 1", "?"+cast), tid, startArg, evOff, have, want); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	if err := exec(`INSERT INTO audit_log (tenant_id, id, occurred_at, actor_type, actor_user_id, source_addr, user_agent,
			action, target_type, target_id, outcome, request_id)
		SELECT ?, g + ?, `+at+`, 'user', 1 + g % `+fmt.Sprint(scaleUsers)+`, '203.0.113.7', 'bench',
			`+pick(scaleAuditActions)+`, 'webhook', '' || (g % 1000), 'success', 'r' || g
		FROM `+series(sqlite, "?"+cast+" + 1", "?"+cast), tid, auOff, startArg, have, want); err != nil {
		return fmt.Errorf("audit records: %w", err)
	}
	for seq, next := range map[string]int64{"events.seq": evOff + int64(want) + 1, "audit_log": auOff + int64(want) + 1} {
		if err := exec(`INSERT INTO id_sequences (tenant_id, name, next_id) VALUES (?, '`+seq+`', ?)
			ON CONFLICT (tenant_id, name) DO UPDATE SET next_id = excluded.next_id`, tid, next); err != nil {
			return fmt.Errorf("id sequence %s: %w", seq, err)
		}
	}
	if sqlite {
		return janitor.NewStatistics(d, nil).RunOnce(context.Background())
	}
	if err := exec("ANALYZE events"); err != nil {
		return err
	}
	return exec("ANALYZE audit_log")
}
