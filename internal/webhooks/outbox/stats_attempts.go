package outbox

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Bucket is one interval of a registration's attempts (AttemptBuckets):
// how many were made, how many the target answered with 2xx (the worker's
// success), and their durations.
type Bucket struct {
	Start     time.Time
	Attempts  int64
	Succeeded int64
	// AvgMS and MaxMS are the attempts' mean and longest duration, 0
	// without attempts.
	AvgMS, MaxMS int64
}

// SuccessRate is the share of the bucket's attempts that succeeded, and
// false without attempts.
func (b Bucket) SuccessRate() (float64, bool) {
	if b.Attempts == 0 {
		return 0, false
	}
	return float64(b.Succeeded) / float64(b.Attempts), true
}

// bucketSQL numbers an attempt's interval of @size seconds since the Unix
// epoch (the intervals Go's time.Truncate makes of UTC times).
var bucketSQL = map[string]string{
	"postgres": "CAST(floor(extract(epoch FROM attempted_at) / @size) AS bigint)",
	// SQLite keeps times as text; strftime('%s') reads them to whole
	// seconds, which is all an interval of an hour or more needs.
	"sqlite": "CAST(strftime('%s', attempted_at) AS INTEGER) / @size",
}

// AttemptBuckets aggregates the registration's attempts of the n
// intervals of length size that end with the one holding now, oldest
// first, intervals without attempts included (an attempt past the last
// interval, recorded by a replica whose clock is ahead, is left out). The database aggregates
// (one row per interval with attempts), reading only the registration's
// attempts of the range from delivery_attempts_webhook_idx, so the cost is
// bounded by the range, not by the history.
func AttemptBuckets(ctx context.Context, q *gorm.DB, tenantID, webhookID int64, now time.Time, size time.Duration, n int) ([]Bucket, error) {
	if size < time.Second || size%time.Second != 0 || n < 1 {
		return nil, fmt.Errorf("outbox: attempt buckets of %v × %d", size, n)
	}
	secs := int64(size / time.Second)
	first := now.UTC().Unix()/secs - int64(n-1)
	from := time.Unix(first*secs, 0).UTC()
	expr, ok := bucketSQL[q.Dialector.Name()]
	if !ok {
		return nil, fmt.Errorf("outbox: attempt buckets on %s", q.Dialector.Name())
	}
	var rows []struct {
		B         int64   `gorm:"column:b"`
		Attempts  int64   `gorm:"column:attempts"`
		Succeeded int64   `gorm:"column:succeeded"`
		AvgMS     float64 `gorm:"column:avg_ms"`
		MaxMS     int64   `gorm:"column:max_ms"`
	}
	err := q.WithContext(ctx).Raw(`SELECT `+expr+` AS b, COUNT(*) AS attempts,
  SUM(CASE WHEN status_code BETWEEN 200 AND 299 THEN 1 ELSE 0 END) AS succeeded,
  AVG(duration_ms) AS avg_ms, MAX(duration_ms) AS max_ms
FROM delivery_attempts
WHERE tenant_id = @tenant AND webhook_id = @webhook AND attempted_at >= @from AND attempted_at < @until
GROUP BY 1`, map[string]any{"size": secs, "tenant": tenantID, "webhook": webhookID, "from": from, "until": from.Add(time.Duration(n) * size)}).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("outbox: attempt buckets of webhook %d: %w", webhookID, err)
	}
	out := make([]Bucket, n)
	for i := range out {
		out[i].Start = time.Unix((first+int64(i))*secs, 0).UTC()
	}
	for _, r := range rows {
		if i := r.B - first; i >= 0 && i < int64(n) {
			out[i].Attempts, out[i].Succeeded = r.Attempts, r.Succeeded
			out[i].AvgMS, out[i].MaxMS = int64(r.AvgMS+0.5), r.MaxMS
		}
	}
	return out, nil
}
