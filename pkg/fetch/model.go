// Package fetch is the fetch flow (spec sections 3, 4 and 6): a user asks for
// a refresh of data points, the service fills built-in fields at once and
// asks integrations for the external ones through one act.fetch_data event,
// and integrations return correlated results through the act data PUTs.
//
// Every writer of an act's data points (fetch requests, correlated results,
// ordinary edits) first takes the act's row lock (acts.Lock), so the checks a
// write makes stay true until it commits: on PostgreSQL a FOR UPDATE on the
// act row, on SQLite the database write lock every transaction takes at
// BEGIN.
//
// Decisions where the spec and DESIGN leave room:
//
//   - Built-in fields are filled when the act is created (revision 0, no
//     history entry: the act's starting state) and refreshed by every fetch
//     request that selects them, by the system actor, with the request's id
//     in the history; the revision increments only when the value changes.
//     A provider value the field's type cannot hold makes that field's fetch
//     failed instead of storing a guess.
//   - A fetch request expires at expires_at: a result arriving at or after
//     it is too late.
//   - An unknown fetch_request_id (none of this act) is a 422 on
//     errors.fetch_request_id, not a 404: the act in the path exists.
//   - An identical re-send of an accepted value or a reported error is
//     accepted again (200, nothing written) even after expiry or a newer
//     request, so an integration retrying after a lost response never sees
//     a spurious conflict.
//   - An error text must be 1..1,000 characters.
//   - An ordinary edit to the value a field already has changes nothing (no
//     revision, no history). Any other ordinary edit increments the
//     revision, so a result still pending for that field gets 409.
package fetch

import (
	"time"

	"github.com/finsvc/finsvc/pkg/acts"
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
func (r *Request) Expired(now time.Time) bool { return acts.Expired(r.ExpiresAt, now) }

// Field is the state of one selected data point within one request (table
// fetch_request_fields). State is awaiting, accepted, failed or superseded;
// "expired" is derived at read time (acts.DerivedState).
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
		if f.State == acts.FetchAwaiting || f.State == acts.FetchExpired {
			if r.Expired(now) {
				return StatusExpired
			}
			return StatusPending
		}
	}
	return StatusCompleted
}
