package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/tenant"
)

// The baselines the full chain is compared with, all on one bare echo
// server with no middleware:
//
//   - /pgx/…: the honest floor. The tenant comes from the Host through an
//     in-memory map, the rows from pgxpool directly (no GORM, no
//     database/sql): one QueryRow for a client, the act's three queries
//     for an act. This is what a hand-written Go service reading the same
//     rows costs.
//   - /bare/…: GORM and the same JSON, with no middleware. For a client,
//     GORM's own read of the row through tenant.Scope (Take into the
//     model): what the store cost before it read the row with db.Query.
//     For an act, the same store call the handler makes: what the
//     middleware alone costs.
//
// The pools use the server's URL and the same connection cap; only the
// client code differs. The floor keeps pgx's own defaults (its statement
// cache on), whatever mode the server itself chose: the comparison is with
// what a hand-written service gets without asking. /pgx-exec/… is the same
// code in pgx's exec mode, the floor of a deployment behind a transaction
// pooler (internal/db's mode there), shown beside it and labelled so.

// pgMaxConns is the server's PostgreSQL pool cap (internal/db's pgMaxOpenConns).
const pgMaxConns = 20

// pgxBaseline opens a baseline pgx pool on dbURL: with pgx's default query
// mode, or with mode (e.g. "exec") when it is set. A mode the URL names is
// replaced.
func pgxBaseline(ctx context.Context, dbURL, mode string) (*pgxpool.Pool, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	if mode != "" {
		q.Set("default_query_exec_mode", mode)
	}
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = pgMaxConns
	return pgxpool.NewWithConfig(ctx, cfg)
}

// hostTenants resolves a Host header to a tenant id from memory.
type hostTenants map[string]int64

func (h hostTenants) of(r *http.Request) (int64, bool) {
	host := r.Host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		host = hh
	}
	id, ok := h[host]
	return id, ok
}

// pgxClient is the wire shape of a client (gen/models.Client's names).
type pgxClient struct {
	ID          int64     `json:"id"`
	CompanyName string    `json:"company_name"`
	OrgNumber   string    `json:"org_number"`
	Country     string    `json:"country"`
	CreditLimit rawNumber `json:"credit_limit"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// rawNumber is a decimal PostgreSQL printed, written as a JSON number.
type rawNumber string

func (n rawNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

type pgxDataPoint struct {
	ID                 int64      `json:"id"`
	TemplateFieldKey   string     `json:"template_field_key"`
	Name               string     `json:"name"`
	Type               string     `json:"type"`
	Source             string     `json:"source"`
	Options            *string    `json:"options"`
	Value              *string    `json:"value"`
	SourceValue        *string    `json:"source_value"`
	Revision           int64      `json:"revision"`
	UpdatedAt          time.Time  `json:"updated_at"`
	FetchRequestID     *string    `json:"fetch_request_id,omitempty"`
	FetchState         *string    `json:"fetch_state,omitempty"`
	FetchError         *string    `json:"fetch_error,omitempty"`
	FetchExpiresAt     *time.Time `json:"fetch_expires_at,omitempty"`
	lastFetchRequestID *string
}

type pgxAct struct {
	UUID        string         `json:"uuid"`
	ClientID    int64          `json:"client_id"`
	TemplateID  int64          `json:"template_id"`
	Title       string         `json:"title"`
	Status      string         `json:"status"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	FinalizedAt *time.Time     `json:"finalized_at"`
	Data        []pgxDataPoint `json:"data"`
}

const (
	pgxClientSQL = `SELECT id, company_name, org_number, country, credit_limit::text, created_at, updated_at
		FROM clients WHERE tenant_id = $1 AND id = $2`
	pgxActSQL = `SELECT uuid::text, client_id, template_id, title, status, created_at, updated_at, finalized_at
		FROM acts WHERE tenant_id = $1 AND uuid = $2`
	pgxDataSQL = `SELECT id, key, name, type, source, options, value, source_value, revision, updated_at, last_fetch_request_id::text
		FROM data_points WHERE tenant_id = $1 AND act_uuid = $2 ORDER BY position, id`
	pgxFetchSQL = `SELECT data_points.id, f.fetch_request_id::text, f.state, f.error, r.expires_at
		FROM data_points
		JOIN fetch_request_fields f ON f.tenant_id = data_points.tenant_id
			AND f.fetch_request_id = data_points.last_fetch_request_id AND f.data_point_id = data_points.id
		JOIN fetch_requests r ON r.tenant_id = f.tenant_id AND r.id = f.fetch_request_id
		WHERE data_points.tenant_id = $1 AND data_points.act_uuid = $2`
)

// routeBaselines registers the baseline routes on bare: /bare/… (GORM),
// /pgx/… on pool and /pgx-exec/… on execPool.
func routeBaselines(bare *echo.Echo, pool, execPool *pgxpool.Pool, hosts hostTenants, tn *tenant.Tenant, g *gorm.DB, as *acts.Store) {
	bare.GET("/bare/clients/:id", func(c echo.Context) error {
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil {
			return c.NoContent(http.StatusBadRequest)
		}
		var cl clients.Client
		err = tenant.Scope(tenant.NewContext(c.Request().Context(), tn), g).Where("id = ?", id).Take(&cl).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return c.NoContent(http.StatusNotFound)
		}
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, &cl)
	})
	bare.GET("/bare/acts/:uuid", func(c echo.Context) error {
		id, err := uuid.Parse(c.Param("uuid"))
		if err != nil {
			return c.NoContent(http.StatusBadRequest)
		}
		d, err := as.Get(tenant.NewContext(c.Request().Context(), tn), id)
		if err != nil {
			if apperr.Is(err, apperr.NotFound) {
				return c.NoContent(http.StatusNotFound)
			}
			return err
		}
		return c.JSON(http.StatusOK, d)
	})
	routePgx(bare, "/pgx", pool, hosts)
	routePgx(bare, "/pgx-exec", execPool, hosts)
}

// routePgx registers the pgx baselines under prefix, reading from pool.
func routePgx(bare *echo.Echo, prefix string, pool *pgxpool.Pool, hosts hostTenants) {
	bare.GET(prefix+"/clients/:id", func(c echo.Context) error {
		tid, ok := hosts.of(c.Request())
		if !ok {
			return c.NoContent(http.StatusNotFound)
		}
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil {
			return c.NoContent(http.StatusBadRequest)
		}
		var cl pgxClient
		var limit string
		err = pool.QueryRow(c.Request().Context(), pgxClientSQL, tid, id).Scan(
			&cl.ID, &cl.CompanyName, &cl.OrgNumber, &cl.Country, &limit, &cl.CreatedAt, &cl.UpdatedAt)
		if err == pgx.ErrNoRows {
			return c.NoContent(http.StatusNotFound)
		}
		if err != nil {
			return err
		}
		cl.CreditLimit = rawNumber(limit)
		return c.JSON(http.StatusOK, &cl)
	})
	bare.GET(prefix+"/acts/:uuid", func(c echo.Context) error {
		tid, ok := hosts.of(c.Request())
		if !ok {
			return c.NoContent(http.StatusNotFound)
		}
		id := c.Param("uuid")
		if _, err := uuid.Parse(id); err != nil {
			return c.NoContent(http.StatusBadRequest)
		}
		a, err := pgxReadAct(c.Request().Context(), pool, tid, id)
		if err == pgx.ErrNoRows {
			return c.NoContent(http.StatusNotFound)
		}
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, a)
	})
}

// pgxReadAct reads what acts.Store.Get reads (the act, its data points in
// order, each one's latest fetch) in the same three queries.
func pgxReadAct(ctx context.Context, pool *pgxpool.Pool, tid int64, id string) (*pgxAct, error) {
	var a pgxAct
	if err := pool.QueryRow(ctx, pgxActSQL, tid, id).Scan(&a.UUID, &a.ClientID, &a.TemplateID, &a.Title, &a.Status,
		&a.CreatedAt, &a.UpdatedAt, &a.FinalizedAt); err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, pgxDataSQL, tid, id)
	if err != nil {
		return nil, err
	}
	a.Data = make([]pgxDataPoint, 0, 64)
	for rows.Next() {
		var dp pgxDataPoint
		if err := rows.Scan(&dp.ID, &dp.TemplateFieldKey, &dp.Name, &dp.Type, &dp.Source, &dp.Options, &dp.Value,
			&dp.SourceValue, &dp.Revision, &dp.UpdatedAt, &dp.lastFetchRequestID); err != nil {
			rows.Close()
			return nil, err
		}
		a.Data = append(a.Data, dp)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	type fetch struct {
		req, state string
		err        *string
		expires    time.Time
	}
	fetches := map[int64]*fetch{}
	rows, err = pool.Query(ctx, pgxFetchSQL, tid, id)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var dpID int64
		f := &fetch{}
		if err := rows.Scan(&dpID, &f.req, &f.state, &f.err, &f.expires); err != nil {
			rows.Close()
			return nil, err
		}
		fetches[dpID] = f
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range a.Data {
		if f := fetches[a.Data[i].ID]; f != nil {
			a.Data[i].FetchRequestID, a.Data[i].FetchState, a.Data[i].FetchError = &f.req, &f.state, f.err
			a.Data[i].FetchExpiresAt = &f.expires
		}
	}
	return &a, nil
}

// checkBaselines makes sure each baseline answers what the full chain
// answers about (the same client, the same number of data points), so that
// a broken baseline cannot flatter the ratio.
func (e *env) checkBaselines(clientID int64, actUUID string, points int) error {
	get := func(u string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", u, nil)
		req.Host = host
		return http.DefaultClient.Do(req)
	}
	for _, p := range []string{"/pgx/clients/" + strconv.FormatInt(clientID, 10), "/pgx-exec/clients/" + strconv.FormatInt(clientID, 10), "/bare/clients/" + strconv.FormatInt(clientID, 10)} {
		resp, err := get(e.BareURL + p)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
	if actUUID == "" {
		return nil
	}
	var a pgxAct
	resp, err := get(e.BareURL + "/pgx/acts/" + actUUID)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("/pgx/acts/%s: %d", actUUID, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return err
	}
	fetched := 0
	for _, dp := range a.Data {
		if dp.FetchState != nil && dp.Value != nil {
			fetched++
		}
	}
	if len(a.Data) != points || fetched != points {
		return fmt.Errorf("/pgx/acts/%s: %d data points (%d with a value and a fetch), want %d", actUUID, len(a.Data), fetched, points)
	}
	return nil
}
