package oauth

import (
	"time"

	"github.com/finsvc/finsvc/internal/oauth/store"
)

// OnJanitorRun sets a hook called after each background run of j.
func OnJanitorRun(j *Janitor, f func(store.PurgeStats, error)) { j.ran = f }

// SetClock replaces the service's clock (sessions, bearer expiry, login
// throttling).
func SetClock(s *Service, now func() time.Time) { s.now = now }
