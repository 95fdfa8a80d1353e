package outbox

// Status is the state of one delivery (deliveries.status; the migration's
// CHECK constraint lists the same values).
type Status string

// Delivery statuses. Pending and Delivering are live (a worker may still
// attempt the row); the others are final until a redelivery.
const (
	Pending    Status = "pending"    // waiting for next_attempt_at
	Delivering Status = "delivering" // leased by a worker, attempt in flight
	Succeeded  Status = "succeeded"  // the target answered 2xx
	Failed     Status = "failed"     // attempts exhausted, expired, blocked or 410
	Cancelled  Status = "cancelled"  // the registration stopped being eligible
)

// SQL literals of the statuses that queries compare with. They stay
// literals, not bind parameters, so that PostgreSQL matches the partial
// index deliveries_claim_idx (WHERE status IN ('pending', 'delivering')).
const (
	sqlPending    = "'" + string(Pending) + "'"
	sqlDelivering = "'" + string(Delivering) + "'"
	sqlLive       = "(" + sqlPending + ", " + sqlDelivering + ")"
)

// Final reports whether s ends the delivery (until a redelivery): a final
// delivery lives in delivery_history, a live one in deliveries.
func (s Status) Final() bool {
	return s == Succeeded || s == Failed || s == Cancelled
}

// Statuses lists every status, live ones first.
var Statuses = []Status{Pending, Delivering, Succeeded, Failed, Cancelled}

// ValidStatus reports whether s is a delivery status.
func ValidStatus(s string) bool {
	for _, x := range Statuses {
		if string(x) == s {
			return true
		}
	}
	return false
}
