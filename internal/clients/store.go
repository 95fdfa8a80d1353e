package clients

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/counts"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/money"
	"github.com/finsvc/finsvc/internal/page"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/tombstones"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// Sequence is the db.NextIDs sequence of client ids (per tenant).
const Sequence = "clients"

// Field limits. CreditLimit is stored as NUMERIC(20,2): at most two
// fractional digits and 18 before the point.
const (
	MaxCompanyNameLength = 200
	MaxOrgNumberLength   = 50
	CreditLimitDecimals  = 2
	creditLimitIntDigits = 18
	// MaxCreditLimit is the largest value the column, NUMERIC(20,2), holds.
	MaxCreditLimit = "999999999999999999.99"
)

// Input is a new client.
type Input struct {
	CompanyName string
	OrgNumber   string
	Country     string
	CreditLimit money.Decimal
}

// Patch changes the non-nil fields of a client.
type Patch struct {
	CompanyName *string
	OrgNumber   *string
	Country     *string
	CreditLimit *money.Decimal
}

// Store reads and writes the clients of the tenant in the context. Every
// query goes through tenant.Scope.
type Store struct {
	db *db.DB
	// Outbox records the client.* events (nil: a zero Outbox, which
	// records them with the default delivery policy).
	Outbox *outbox.Outbox
}

// NewStore returns a Store over d.
func NewStore(d *db.DB) *Store { return &Store{db: d} }

// Filter narrows List; nil fields do not filter. All set fields must
// match.
type Filter struct {
	OrgNumber  *string // exact, after trimming surrounding spaces
	Country    *string // ISO 3166-1 alpha-2
	NamePrefix *string // company name prefix, ignoring case
	// UpdatedSince keeps the clients changed strictly after it and orders
	// them by (updated_at, id), oldest change first (db.Stamp).
	UpdatedSince *time.Time
}

func (f Filter) empty() bool {
	return f.OrgNumber == nil && f.Country == nil && f.NamePrefix == nil && f.UpdatedSince == nil
}

// countryOnly reports whether country is f's only filter, the one filter
// whose deep pages seek by list_blocks (counts.ClientBlocks).
func (f Filter) countryOnly() bool {
	return f.Country != nil && f.OrgNumber == nil && f.NamePrefix == nil && f.UpdatedSince == nil
}

// check validates f (the spec's bounds, again, for callers other than the
// API) and trims the organisation number as Create stores it.
func (f *Filter) check() error {
	fe := apperr.FieldErrors{}
	if f.OrgNumber != nil {
		v := strings.TrimSpace(*f.OrgNumber)
		f.OrgNumber = &v
		checkOrgNumber(fe, v)
	}
	if f.Country != nil {
		checkCountry(fe, *f.Country)
	}
	if f.NamePrefix != nil {
		checkText(fe, "q", *f.NamePrefix, MaxCompanyNameLength)
	}
	return fe.Err(apperr.Invalid, "The request is invalid.")
}

// total is the exact number of clients matching f: a stored total for no
// filter or a single equality filter (list_counts), otherwise a count by
// the narrowest filter's index, bounded by the rows that match it (one
// organisation number's clients, or the clients whose name starts with
// the prefix).
func (s *Store) total(ctx context.Context, f Filter) (int64, error) {
	switch {
	case f.empty():
		return counts.Total(ctx, s.db.DB, counts.Clients)
	case f.UpdatedSince != nil:
		// Counted over clients_updated_idx: as many index entries as
		// clients changed since (README, Incremental sync).
	case f.NamePrefix == nil && f.OrgNumber == nil:
		return counts.Total(ctx, s.db.DB, counts.ClientsIn(*f.Country))
	case f.NamePrefix == nil && f.Country == nil:
		return counts.Total(ctx, s.db.DB, counts.ClientsWithOrg(*f.OrgNumber))
	}
	var n int64
	err := s.where(tenant.Scope(ctx, s.db.DB.Model(&Client{})), f).Count(&n).Error
	return n, err
}

// where adds f's conditions. The prefix is one range of name_key, whose
// order is bytewise on both dialects (COLLATE "C" on PostgreSQL): every
// key that starts with the prefix sorts at or after it and before the
// prefix followed by the last code point.
func (s *Store) where(q *gorm.DB, f Filter) *gorm.DB {
	if f.OrgNumber != nil {
		q = q.Where("org_number = ?", *f.OrgNumber)
	}
	if f.Country != nil {
		q = q.Where("country = ?", *f.Country)
	}
	if f.NamePrefix != nil {
		lo := NameKey(*f.NamePrefix)
		q = q.Where("name_key >= ? AND name_key < ?", lo, lo+string(utf8.MaxRune))
	}
	if f.UpdatedSince != nil {
		q = q.Where("updated_at > ?", f.UpdatedSince.UTC().Truncate(time.Microsecond))
	}
	return q
}

// List returns one page of the clients matching f, ordered by id (by
// updated_at and id with UpdatedSince), and
// their exact total. The total is a stored count or a bounded one (total);
// an unfiltered deep page, or one of a single country, seeks by
// list_blocks; a filtered page takes its
// ids from the filter's index (a deferred join) and then reads only its
// rows.
func (s *Store) List(ctx context.Context, f Filter, p page.Request) (_ []Client, total int64, err error) {
	defer apperr.Wrap(&err, "clients.List(page %d, limit %d)", p.Page, p.Limit)
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	if err := f.check(); err != nil {
		return nil, 0, err
	}
	if total, err = s.total(ctx, f); err != nil {
		return nil, 0, err
	}
	out := []Client{}
	if p.Beyond(total) {
		return out, total, nil
	}
	if !f.empty() {
		order := "id"
		if f.UpdatedSince != nil {
			order = "updated_at, id"
		}
		keys := s.where(tenant.Scope(ctx, s.db.DB.Model(&Client{})), f).Select("id").Order(order).Limit(p.Limit)
		if f.countryOnly() {
			// One country's clients have their own blocks (migration
			// 00098): a deep page skips at most one block's index
			// entries, not every entry of the country before it.
			from, skip, ok, err := counts.Seek(ctx, s.db.DB, counts.ClientBlocks(f.Country), int64(p.Offset()), total)
			if err != nil || !ok {
				return out, total, err
			}
			keys = keys.Where("id >= ?", from).Offset(int(skip))
		} else {
			keys = keys.Offset(p.Offset())
		}
		err = tenant.Scope(ctx, s.db.DB).Where("id IN (?)", keys).Order(order).Find(&out).Error
		if err != nil {
			return nil, 0, err
		}
		return out, total, nil
	}
	from, skip, ok, err := counts.Seek(ctx, s.db.DB, counts.Clients.Kind, int64(p.Offset()), total)
	if err != nil || !ok {
		return out, total, err
	}
	err = tenant.Scope(ctx, s.db.DB).Where("id >= ?", from).Order("id").Limit(p.Limit).Offset(int(skip)).Find(&out).Error
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// Get returns the client with id, or apperr.NotFound (also for another
// tenant's client).
func (s *Store) Get(ctx context.Context, id int64) (*Client, error) {
	return s.read(ctx, s.db.DB, getClient, id)
}

// GetTx is Get inside the caller's transaction tx (creating an act,
// filling built-in fields). On PostgreSQL it takes a FOR KEY SHARE lock,
// the same lock the acts foreign key takes, so the client cannot be
// deleted before the caller commits; on SQLite the transaction holds the
// write lock anyway.
func (s *Store) GetTx(ctx context.Context, tx *gorm.DB, id int64) (*Client, error) {
	return s.read(ctx, tx, getClientKeyShare, id)
}

// clientColumns are Client's columns in the order read scans them.
const clientColumns = "tenant_id, id, company_name, org_number, country, credit_limit, name_key, created_at, updated_at"

// The read of one client, written as SQL (tenant.Query, db.Query) rather
// than built by GORM per request: it is the hot read of GET /clients/{id}. In a
// transaction PostgreSQL takes a row lock (KEY SHARE for readers, UPDATE
// for writers); SQLite's transaction holds the write lock already.
var (
	getClient          = tenant.NewQuery("SELECT " + clientColumns + " FROM clients WHERE tenant_id = ? AND id = ? LIMIT 1")
	getClientKeyShare  = tenant.NewQuery("SELECT " + clientColumns + " FROM clients WHERE tenant_id = ? AND id = ? LIMIT 1 FOR KEY SHARE")
	getClientForUpdate = tenant.NewQuery("SELECT " + clientColumns + " FROM clients WHERE tenant_id = ? AND id = ? LIMIT 1 FOR UPDATE")
)

// read runs q (one of the reads above) for the current tenant's client id
// on h, a handle or a transaction.
func (s *Store) read(ctx context.Context, h *gorm.DB, q tenant.Query, id int64) (*Client, error) {
	if s.db.Dialect != db.Postgres {
		q = getClient
	}
	var c Client
	err := q.One(ctx, h, []any{id},
		&c.TenantID, &c.ID, &c.CompanyName, &c.OrgNumber, &c.Country, &c.CreditLimit, &c.NameKey, &c.CreatedAt, &c.UpdatedAt)
	switch {
	case errors.Is(err, db.ErrNoRows):
		return nil, apperr.E(apperr.NotFound, "client not found")
	case err != nil:
		return nil, fmt.Errorf("clients: read %d: %w", id, err)
	}
	return &c, nil
}

// Create validates in and stores a new client.
func (s *Store) Create(ctx context.Context, in Input) (_ *Client, err error) {
	tid := tenant.ID(ctx)
	defer apperr.Wrap(&err, "clients.Create(tenant %d)", tid)
	in.CompanyName = strings.TrimSpace(in.CompanyName)
	in.OrgNumber = strings.TrimSpace(in.OrgNumber)
	fe := apperr.FieldErrors{}
	checkName(fe, in.CompanyName)
	checkOrgNumber(fe, in.OrgNumber)
	checkCountry(fe, in.Country)
	checkCreditLimit(fe, in.CreditLimit)
	if err := fe.Err(apperr.Invalid, "The request is invalid."); err != nil {
		return nil, err
	}
	c := &Client{
		TenantID: tid, CompanyName: in.CompanyName, NameKey: NameKey(in.CompanyName), OrgNumber: in.OrgNumber,
		Country: in.Country, CreditLimit: in.CreditLimit,
	}
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		id, err := db.NextID(tx, tid, Sequence)
		if err != nil {
			return err
		}
		c.ID = id
		if c.UpdatedAt, err = db.Stamp(tx, tid, Sequence, tx.NowFunc()); err != nil {
			return err
		}
		c.CreatedAt = c.UpdatedAt
		if err := tx.Create(c).Error; err != nil {
			return err
		}
		return s.emit(ctx, tx, outbox.ClientCreated, c, c.CreatedAt)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Update applies the non-nil fields of p to client id and returns the
// result. An empty patch returns the client unchanged.
func (s *Store) Update(ctx context.Context, id int64, p Patch) (_ *Client, err error) {
	defer apperr.Wrap(&err, "clients.Update(%d)", id)
	fe := apperr.FieldErrors{}
	if p.CompanyName != nil {
		v := strings.TrimSpace(*p.CompanyName)
		p.CompanyName = &v
		checkName(fe, v)
	}
	if p.OrgNumber != nil {
		v := strings.TrimSpace(*p.OrgNumber)
		p.OrgNumber = &v
		checkOrgNumber(fe, v)
	}
	if p.Country != nil {
		checkCountry(fe, *p.Country)
	}
	if p.CreditLimit != nil {
		checkCreditLimit(fe, *p.CreditLimit)
	}
	if err := fe.Err(apperr.Invalid, "The request is invalid."); err != nil {
		return nil, err
	}
	var c *Client
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		var err error
		if c, err = s.read(ctx, tx, getClientForUpdate, id); err != nil {
			return err
		}
		changes := map[string]any{}
		if p.CompanyName != nil {
			c.CompanyName, changes["company_name"] = *p.CompanyName, *p.CompanyName
			c.NameKey, changes["name_key"] = NameKey(*p.CompanyName), NameKey(*p.CompanyName)
		}
		if p.OrgNumber != nil {
			c.OrgNumber, changes["org_number"] = *p.OrgNumber, *p.OrgNumber
		}
		if p.Country != nil {
			c.Country, changes["country"] = *p.Country, *p.Country
		}
		if p.CreditLimit != nil {
			c.CreditLimit, changes["credit_limit"] = *p.CreditLimit, *p.CreditLimit
		}
		if len(changes) == 0 {
			return nil
		}
		if c.UpdatedAt, err = db.Stamp(tx, c.TenantID, Sequence, tx.NowFunc()); err != nil {
			return err
		}
		changes["updated_at"] = c.UpdatedAt
		if err := tenant.Scope(ctx, tx).Model(&Client{}).Where("id = ?", id).Updates(changes).Error; err != nil {
			return err
		}
		return s.emit(ctx, tx, outbox.ClientUpdated, c, c.UpdatedAt)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Deleted returns a page of the tombstones of deleted clients, deleted
// strictly after since (all when nil), oldest first.
func (s *Store) Deleted(ctx context.Context, since *time.Time, p page.Request) ([]tombstones.Tombstone, int64, error) {
	return tombstones.List(ctx, s.db.DB, tombstones.Clients, since, p)
}

// Delete removes client id and leaves its tombstone. It is refused (apperr.Invalid, errors.client)
// while the client has acts: acts keep their client for the record.
func (s *Store) Delete(ctx context.Context, id int64) (err error) {
	defer apperr.Wrap(&err, "clients.Delete(%d)", id)
	hasActs := apperr.E(apperr.Invalid, "The client has acts and cannot be deleted.").
		WithField("client", "has acts; a client with acts cannot be deleted")
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		// The row lock makes a concurrent act insert (whose foreign-key
		// check takes a KEY SHARE lock on this row) wait for us or us for it,
		// so the check below sees every committed act.
		c, err := s.read(ctx, tx, getClientForUpdate, id)
		if err != nil {
			return err
		}
		var n int64
		if err := tenant.Scope(ctx, tx).Table("acts").Where("client_id = ?", id).Limit(1).Count(&n).Error; err != nil {
			return fmt.Errorf("count acts: %w", err)
		}
		if n > 0 {
			return hasActs
		}
		// The tombstone takes the list's stamp, like an update, so that a
		// sync sees deletions in commit order too.
		at, err := db.Stamp(tx, tenant.ID(ctx), Sequence, tx.NowFunc())
		if err != nil {
			return err
		}
		if err := tombstones.Record(ctx, tx, tombstones.Clients, strconv.FormatInt(id, 10), nil, at); err != nil {
			return err
		}
		if err := tenant.Scope(ctx, tx).Where("id = ?", id).Delete(&Client{}).Error; err != nil {
			return err
		}
		return s.emit(ctx, tx, outbox.ClientDeleted, c, at)
	})
	if db.IsForeignKeyViolation(err) {
		// Belt and braces: the acts foreign key refused the delete.
		return hasActs
	}
	return err
}

func checkName(fe apperr.FieldErrors, v string) {
	checkText(fe, "company_name", v, MaxCompanyNameLength)
}

func checkOrgNumber(fe apperr.FieldErrors, v string) {
	checkText(fe, "org_number", v, MaxOrgNumberLength)
}

func checkText(fe apperr.FieldErrors, field, v string, maxLen int) {
	switch {
	case v == "":
		fe.Add(field, "is required")
	case !utf8.ValidString(v):
		fe.Add(field, "must be valid UTF-8")
	case utf8.RuneCountInString(v) > maxLen:
		fe.Add(field, fmt.Sprintf("must be at most %d characters", maxLen))
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		fe.Add(field, "must not contain control characters")
	}
}

func checkCountry(fe apperr.FieldErrors, v string) {
	if !ValidCountry(v) {
		fe.Add("country", "must be an ISO 3166-1 alpha-2 country code in upper case, such as NO")
	}
}

// CheckCreditLimit returns the problem with v as a credit limit, or "".
func CheckCreditLimit(v money.Decimal) string {
	switch {
	case v.Sign() < 0:
		return "must be at least 0"
	case v.Scale() > CreditLimitDecimals:
		return fmt.Sprintf("must have at most %d fractional digits", CreditLimitDecimals)
	case intDigits(v) > creditLimitIntDigits:
		return "must be at most " + MaxCreditLimit
	}
	return ""
}

func checkCreditLimit(fe apperr.FieldErrors, v money.Decimal) {
	if msg := CheckCreditLimit(v); msg != "" {
		fe.Add("credit_limit", msg)
	}
}

// intDigits counts the digits before the point of the canonical form
// (which has no leading zeros, "0" aside).
func intDigits(v money.Decimal) int {
	s := strings.TrimPrefix(v.String(), "-")
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s = s[:i]
	}
	return len(s)
}
