package acts

import (
	"time"
)

// Request is a fetch request (table fetch_requests). Its id is a UUIDv7
// (time-ordered, friendly to the primary key index).
type Request struct {
	TenantID            int64  `gorm:"primaryKey;autoIncrement:false"`
	ID                  string `gorm:"primaryKey"`
	ActUUID             string `gorm:"not null"`
	RequestedByUserID   int64  `gorm:"not null"`
	RequestedByClientID *string
	RequestedAt         time.Time `gorm:"not null"`
	ExpiresAt           time.Time `gorm:"not null"`
}

// TableName pins the table.
func (Request) TableName() string { return "fetch_requests" }

// Expired reports whether the request has expired at now (at expires_at
// and after).
func (r *Request) Expired(now time.Time) bool { return Expired(r.ExpiresAt, now) }

// Field is the state of one selected data point within one request (table
// fetch_request_fields). State is awaiting, accepted, failed or superseded;
// "expired" is derived at read time (DerivedState).
type Field struct {
	TenantID         int64  `gorm:"primaryKey;autoIncrement:false"`
	FetchRequestID   string `gorm:"primaryKey"`
	DataPointID      int64  `gorm:"primaryKey;autoIncrement:false"`
	External         bool   `gorm:"not null"`
	State            string `gorm:"not null"`
	RevisionSnapshot int64  `gorm:"not null"`
	// ResultValue is the accepted value (normalized), Error the reported
	// failure: kept to recognise identical re-sends.
	ResultValue *string
	Error       *string
	UpdatedAt   time.Time
}

// TableName pins the table.
func (Field) TableName() string { return "fetch_request_fields" }

// Request statuses.
const (
	StatusPending   = "pending"
	StatusCompleted = "completed"
	StatusExpired   = "expired"
)

// View is a request with the state of each selected field, as of a moment.
type View struct {
	Request Request
	Status  string
	Fields  []FieldView
}

// FieldView is one selected field with its derived state.
type FieldView struct {
	DataPointID int64
	Key         string
	External    bool
	State       string
	Error       *string
}

// status derives a request's status from its stored field states: pending
// while a field awaits and the deadline has not passed, expired once it has,
// completed when no field awaits.
func status(r *Request, fields []FieldView, now time.Time) string {
	for _, f := range fields {
		if f.State == FetchAwaiting || f.State == FetchExpired {
			if r.Expired(now) {
				return StatusExpired
			}
			return StatusPending
		}
	}
	return StatusCompleted
}
