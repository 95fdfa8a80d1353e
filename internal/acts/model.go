package acts

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/internal/templates"
)

// Status is an act's status (the ActStatus enum of the spec).
type Status string

// Act statuses.
const (
	StatusDraft Status = "draft"
	StatusFinal Status = "final"
)

// Act is a financial act.
type Act struct {
	TenantID    int64     `gorm:"primaryKey;autoIncrement:false"`
	UUID        uuid.UUID `gorm:"column:uuid;primaryKey"`
	ClientID    int64     `gorm:"not null"`
	TemplateID  int64     `gorm:"not null"`
	Title       string    `gorm:"not null"`
	Status      Status    `gorm:"not null"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinalizedAt *time.Time
	// Seq is the act's creation number in its tenant: the list's order,
	// newest first, and the key its deep pages seek by (migration 00080).
	Seq int64 `gorm:"not null"`
}

// TableName pins the table.
func (Act) TableName() string { return "acts" }

// Editable reports whether the act may change (drafts only).
func (a *Act) Editable() bool { return a.Status == StatusDraft }

// DataPoint is an instance of a template field in an act.
type DataPoint struct {
	TenantID        int64            `gorm:"primaryKey;autoIncrement:false"`
	ID              int64            `gorm:"primaryKey;autoIncrement:false"`
	ActUUID         uuid.UUID        `gorm:"not null"`
	TemplateFieldID int64            `gorm:"not null"`
	Position        int              `gorm:"not null"`
	Key             string           `gorm:"not null"`
	Name            string           `gorm:"not null"`
	Type            fieldtype.Type   `gorm:"not null"`
	Source          templates.Source `gorm:"not null"`
	Options         *string
	Value           *string
	SourceValue     *string
	Revision        int64 `gorm:"not null"`
	UpdatedAt       time.Time
	// LastFetchRequestID is the most recent fetch request that selected the
	// data point (set by each new request, under the act's lock).
	LastFetchRequestID *uuid.UUID
}

// TableName pins the table.
func (DataPoint) TableName() string { return "data_points" }

// External reports whether an integration fetches the data point.
func (d *DataPoint) External() bool { return d.Source == templates.SourceExternalData }

// Builtin reports whether the service fills the data point itself.
func (d *DataPoint) Builtin() bool { return templates.IsBuiltin(d.Source) }

// Refreshable reports whether a fetch request may select the data point
// (built-in and external fields; manual ones are entered by people).
func (d *DataPoint) Refreshable() bool { return d.External() || d.Builtin() }

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

// HistoryKind is what a history entry records (the HistoryKind enum of the
// spec).
type HistoryKind string

// History kinds.
const (
	KindActCreated     HistoryKind = "act_created"
	KindActDuplicated  HistoryKind = "act_duplicated"
	KindActUpdated     HistoryKind = "act_updated"
	KindActFinalized   HistoryKind = "act_finalized"
	KindFetchRequested HistoryKind = "fetch_requested"
	KindValueAccepted  HistoryKind = "value_accepted"
	KindFetchFailed    HistoryKind = "fetch_failed"
	KindValueEdited    HistoryKind = "value_edited"
)

// ActorType is who made a change (the ActorType enum of the spec).
type ActorType string

// Actor types.
const (
	ActorUser   ActorType = "user"
	ActorApp    ActorType = "app"
	ActorSystem ActorType = "system"
)

// HistoryEntry is one entry of an act's history.
type HistoryEntry struct {
	TenantID       int64     `gorm:"primaryKey;autoIncrement:false"`
	ID             int64     `gorm:"primaryKey;autoIncrement:false"`
	ActUUID        uuid.UUID `gorm:"not null"`
	At             time.Time `gorm:"not null"`
	ActorType      ActorType `gorm:"not null"`
	ActorID        string    `gorm:"not null"`
	ActorUserID    *int64
	Kind           HistoryKind `gorm:"not null"`
	DataPointID    *int64
	FetchRequestID *uuid.UUID
	OldValue       *string
	NewValue       *string
	Error          *string
}

// TableName pins the table.
func (HistoryEntry) TableName() string { return "act_history" }

// Actor identifies who made a change.
type Actor struct {
	Type   ActorType
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

// FetchRequest is a request to refresh data points (table fetch_requests).
// Its id is a UUIDv7 (time-ordered, friendly to the primary key index).
type FetchRequest struct {
	TenantID            int64     `gorm:"primaryKey;autoIncrement:false"`
	ID                  uuid.UUID `gorm:"primaryKey"`
	ActUUID             uuid.UUID `gorm:"not null"`
	RequestedByUserID   int64     `gorm:"not null"`
	RequestedByClientID *string
	RequestedAt         time.Time `gorm:"not null"`
	ExpiresAt           time.Time `gorm:"not null"`
}

// TableName pins the table.
func (FetchRequest) TableName() string { return "fetch_requests" }

// Expired reports whether the request has expired at now: results must
// arrive before expires_at.
func (r *FetchRequest) Expired(now time.Time) bool { return expired(r.ExpiresAt, now) }

func expired(expiresAt, now time.Time) bool { return !now.Before(expiresAt) }

// FieldState is the fetch state of one field within one fetch request (the
// FieldFetchState enum of the spec).
type FieldState string

// Fetch states. Expired is never stored: it is derived at read time from the
// request's expires_at (derivedState), so expiry needs no writer.
const (
	FetchAwaiting   FieldState = "awaiting"
	FetchAccepted   FieldState = "accepted"
	FetchFailed     FieldState = "failed"
	FetchExpired    FieldState = "expired"
	FetchSuperseded FieldState = "superseded"
)

// derivedState is the state a stored field state reads as at now: an
// awaiting field of an expired request reads as expired.
func derivedState(stored FieldState, expiresAt, now time.Time) FieldState {
	if stored == FetchAwaiting && expired(expiresAt, now) {
		return FetchExpired
	}
	return stored
}

// FetchField is the state of one selected data point within one request
// (table fetch_request_fields).
type FetchField struct {
	TenantID         int64      `gorm:"primaryKey;autoIncrement:false"`
	FetchRequestID   uuid.UUID  `gorm:"primaryKey"`
	DataPointID      int64      `gorm:"primaryKey;autoIncrement:false"`
	External         bool       `gorm:"not null"`
	State            FieldState `gorm:"not null"`
	RevisionSnapshot int64      `gorm:"not null"`
	// ResultValue is the accepted value (normalized), Error the reported
	// failure: kept to recognise identical re-sends.
	ResultValue *string
	Error       *string
	UpdatedAt   time.Time
}

// TableName pins the table.
func (FetchField) TableName() string { return "fetch_request_fields" }

// RequestStatus is a fetch request's status (the FetchRequestStatus enum of
// the spec), derived from its fields' states.
type RequestStatus string

// Fetch request statuses.
const (
	RequestPending   RequestStatus = "pending"
	RequestCompleted RequestStatus = "completed"
	RequestExpired   RequestStatus = "expired"
)

// FetchView is a request with the state of each selected field, as of a
// moment.
type FetchView struct {
	Request FetchRequest
	Status  RequestStatus
	Fields  []FetchFieldView
	// filled are the data points whose value a built-in fill wrote when
	// the request was created (act.data_updated).
	filled []int64
}

// FetchFieldView is one selected field with its derived state.
type FetchFieldView struct {
	DataPointID int64
	Key         string
	External    bool
	State       FieldState
	Error       *string
}

// requestStatus derives a request's status from its field states: pending
// while a field awaits and the deadline has not passed, expired once it has,
// completed when no field awaits.
func requestStatus(r *FetchRequest, fields []FetchFieldView, now time.Time) RequestStatus {
	for _, f := range fields {
		if f.State == FetchAwaiting || f.State == FetchExpired {
			if r.Expired(now) {
				return RequestExpired
			}
			return RequestPending
		}
	}
	return RequestCompleted
}

// FetchState is a data point's most recent fetch (the DataPointFetch of the
// API), with expiry already derived.
type FetchState struct {
	DataPointID    int64
	FetchRequestID uuid.UUID
	State          FieldState
	Error          *string
	ExpiresAt      time.Time
}

// Detail is an act with its data points (in position order) and each data
// point's most recent fetch, keyed by data point id.
type Detail struct {
	Act   Act
	Data  []DataPoint
	Fetch map[int64]*FetchState
}
