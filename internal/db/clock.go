package db

import "time"

// Clock tells the time as the database keeps it. Every time the service
// writes goes through one, so a time written and read back compares equal
// on both dialects. Tests inject their own function; nil means time.Now.
type Clock func() time.Time

// Now is the clock's current time as stored: UTC (SQLite's text timestamps
// then sort chronologically), truncated to the microsecond PostgreSQL keeps.
func (c Clock) Now() time.Time {
	now := time.Now
	if c != nil {
		now = c
	}
	return now().UTC().Truncate(time.Microsecond)
}
