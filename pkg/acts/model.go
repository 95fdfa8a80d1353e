package acts

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/fieldtype"
	"github.com/finsvc/finsvc/pkg/templates"
)

// Act statuses.
const (
	StatusDraft = "draft"
	StatusFinal = "final"
)

// Act is a financial act.
type Act struct {
	TenantID    int64  `gorm:"primaryKey;autoIncrement:false"`
	UUID        string `gorm:"column:uuid;primaryKey"`
	ClientID    int64  `gorm:"not null"`
	TemplateID  int64  `gorm:"not null"`
	Title       string `gorm:"not null"`
	Status      string `gorm:"not null"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinalizedAt *time.Time
}

// TableName pins the table.
func (Act) TableName() string { return "acts" }

// Editable reports whether the act may change (drafts only).
func (a *Act) Editable() bool { return a.Status == StatusDraft }

// DataPoint is an instance of a template field in an act.
type DataPoint struct {
	TenantID        int64  `gorm:"primaryKey;autoIncrement:false"`
	ID              int64  `gorm:"primaryKey;autoIncrement:false"`
	ActUUID         string `gorm:"not null"`
	TemplateFieldID int64  `gorm:"not null"`
	Position        int    `gorm:"not null"`
	Key             string `gorm:"not null"`
	Name            string `gorm:"not null"`
	Type            string `gorm:"not null"`
	Source          string `gorm:"not null"`
	Options         *string
	Value           *string
	SourceValue     *string
	Revision        int64 `gorm:"not null"`
	UpdatedAt       time.Time
	// LastFetchRequestID is the most recent fetch request that selected the
	// data point (set by each new request, under the act's lock).
	LastFetchRequestID *string
}

// TableName pins the table.
func (DataPoint) TableName() string { return "data_points" }

// External reports whether an integration fetches the data point.
func (d *DataPoint) External() bool { return d.Source == "external_data" }

// History kinds (the HistoryKind enum of the spec).
const (
	KindActCreated     = "act_created"
	KindActDuplicated  = "act_duplicated"
	KindActUpdated     = "act_updated"
	KindActFinalized   = "act_finalized"
	KindFetchRequested = "fetch_requested"
	KindValueAccepted  = "value_accepted"
	KindFetchFailed    = "fetch_failed"
	KindValueEdited    = "value_edited"
)

// Actor types.
const (
	ActorUser   = "user"
	ActorApp    = "app"
	ActorSystem = "system"
)

// HistoryEntry is one entry of an act's history.
type HistoryEntry struct {
	TenantID       int64     `gorm:"primaryKey;autoIncrement:false"`
	ID             int64     `gorm:"primaryKey;autoIncrement:false"`
	ActUUID        string    `gorm:"not null"`
	At             time.Time `gorm:"not null"`
	ActorType      string    `gorm:"not null"`
	ActorID        string    `gorm:"not null"`
	ActorUserID    *int64
	Kind           string `gorm:"not null"`
	DataPointID    *int64
	FetchRequestID *string
	OldValue       *string
	NewValue       *string
	Error          *string
}

// TableName pins the table.
func (HistoryEntry) TableName() string { return "act_history" }

// Actor identifies who made a change.
type Actor struct {
	Type   string
	ID     string
	UserID *int64
}

// UserActor is the user behind p: changes a person asks for (creating,
// editing, finalizing, requesting a refresh).
func UserActor(p *auth.Principal) Actor {
	uid := p.UserID
	return Actor{Type: ActorUser, ID: strconv.FormatInt(uid, 10), UserID: &uid}
}

// AppActor is the app behind p, acting for its user: correlated results an
// integration returns for a fetch request.
func AppActor(p *auth.Principal) Actor {
	uid := p.UserID
	return Actor{Type: ActorApp, ID: p.ClientID, UserID: &uid}
}

// SystemActor is the service itself (built-in provider fields).
var SystemActor = Actor{Type: ActorSystem, ID: "finsvc"}

// FieldOptions decodes the snapshotted options (nil when the type has none).
func (d *DataPoint) FieldOptions() (*fieldtype.Options, error) {
	if d.Options == nil || *d.Options == "" || *d.Options == "null" {
		return nil, nil
	}
	var o fieldtype.Options
	if err := json.Unmarshal([]byte(*d.Options), &o); err != nil {
		return nil, fmt.Errorf("acts: data point %d options: %w", d.ID, err)
	}
	return &o, nil
}

// Builtin reports whether the service fills the data point itself.
func (d *DataPoint) Builtin() bool { return templates.IsBuiltin(d.Source) }

// Refreshable reports whether a fetch request may select the data point
// (built-in and external fields; manual ones are entered by people).
func (d *DataPoint) Refreshable() bool { return d.External() || d.Builtin() }

// Fetch states of one field within one fetch request. Expired is never
// stored: it is derived at read time from the request's expires_at.
const (
	FetchAwaiting   = "awaiting"
	FetchAccepted   = "accepted"
	FetchFailed     = "failed"
	FetchExpired    = "expired"
	FetchSuperseded = "superseded"
)

// FetchState is a data point's most recent fetch (the DataPointFetch of the
// API), with expiry already derived.
type FetchState struct {
	DataPointID    int64
	FetchRequestID string
	State          string
	Error          *string
	ExpiresAt      time.Time
}

// Expired reports whether a request with deadline expiresAt has expired at
// now. A request expires at expires_at (spec section 3): results must
// arrive before it.
func Expired(expiresAt, now time.Time) bool { return !now.Before(expiresAt) }

// DerivedState is the state a stored field state reads as at now: an
// awaiting field of an expired request reads as expired.
func DerivedState(stored string, expiresAt, now time.Time) string {
	if stored == FetchAwaiting && Expired(expiresAt, now) {
		return FetchExpired
	}
	return stored
}

// Detail is an act with its data points (in position order) and each data
// point's most recent fetch, keyed by data point id.
type Detail struct {
	Act   Act
	Data  []DataPoint
	Fetch map[int64]*FetchState
}
