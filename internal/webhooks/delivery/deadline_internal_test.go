package delivery

import (
	"testing"
	"time"
)

// An attempt's deadline lies past its timeout and before its lease ends,
// for the default lease and for a short one (FINSVC_WEBHOOK_LEASE), which
// used to leave a deadline already in the past: every attempt "timed out"
// at once.
func TestAttemptDeadlineFitsTheLease(t *testing.T) {
	for _, c := range []struct{ lease, timeout time.Duration }{
		{15*time.Second + leaseMargin, 15 * time.Second},
		{5 * time.Second, 2 * time.Second},
		{2100 * time.Millisecond, 2 * time.Second},
	} {
		d := attemptDeadline(c.lease, c.timeout)
		if d <= c.timeout || d >= c.lease {
			t.Errorf("lease %s, timeout %s: deadline %s, want between them", c.lease, c.timeout, d)
		}
	}
}
