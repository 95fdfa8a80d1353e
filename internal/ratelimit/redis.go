package ratelimit

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// gcraScript is gcra() run atomically inside Redis, so that concurrent
// requests on any number of replicas draw on one budget. It reads the clock
// from Redis (TIME), not from the replicas, so their clock skew does not
// matter. TATs are µs since the epoch (< 2^53: exact as Lua doubles) and are
// written with %.0f because tostring would use exponent notation.
//
// KEYS[1] budget key; ARGV[1] interval µs; ARGV[2] burst; ARGV[3] "1" to
// only look (decide without spending: Peek).
// Returns {allowed, remaining, retry_after_us, reset_us}.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or 0) or 0
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - burst * interval
if now < allow_at then
  return {0, 0, allow_at - now, tat - now}
end
if ARGV[3] ~= '1' then
  local ttl_ms = math.floor((new_tat - now) / 1000) + 1
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', ttl_ms)
end
return {1, math.floor((now - allow_at) / interval), 0, new_tat - now}
`)

// Redis is a Store shared by every replica that uses the same Redis and
// prefix.
type Redis struct {
	client redis.Scripter
	rate   Rate
	prefix string
}

// NewRedis returns a Redis-backed store for rate; keys are prefix+key.
func NewRedis(client redis.Scripter, rate Rate, prefix string) *Redis {
	return &Redis{client: client, rate: rate, prefix: prefix}
}

// Allow implements Store.
func (r *Redis) Allow(ctx context.Context, key string) (Decision, error) {
	return r.run(ctx, key, "0")
}

// Peek implements Store.
func (r *Redis) Peek(ctx context.Context, key string) (Decision, error) {
	return r.run(ctx, key, "1")
}

func (r *Redis) run(ctx context.Context, key, peek string) (Decision, error) {
	res, err := gcraScript.Run(ctx, r.client, []string{r.prefix + key},
		strconv.FormatInt(r.rate.interval(), 10), strconv.FormatInt(r.rate.burst(), 10), peek).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit: redis gcra: %w", err)
	}
	if len(res) != 4 {
		return Decision{}, fmt.Errorf("ratelimit: redis gcra: unexpected reply %v", res)
	}
	return Decision{
		Allowed:    res[0] == 1,
		Limit:      int(r.rate.burst()),
		Remaining:  int(res[1]),
		RetryAfter: micros(res[2]),
		Reset:      micros(res[3]),
	}, nil
}
