package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Memory is an in-process Store: one replica's own budgets.
type Memory struct {
	rate Rate
	now  func() time.Time

	mu    sync.Mutex
	tat   map[string]int64 // key → theoretical arrival time, µs since epoch
	calls int
}

// NewMemory returns an in-process store for rate.
func NewMemory(rate Rate) *Memory {
	return &Memory{rate: rate, now: time.Now, tat: map[string]int64{}}
}

// sweepEvery bounds the map: every so many calls, keys whose budget is full
// again (TAT in the past, so indistinguishable from a new key) are dropped.
const sweepEvery = 4096

// Peek implements Store.
func (m *Memory) Peek(_ context.Context, key string) (Decision, error) {
	now := m.now().UnixMicro()
	m.mu.Lock()
	defer m.mu.Unlock()
	d, _ := gcra(m.rate, m.tat[key], now)
	return d, nil
}

// Allow implements Store.
func (m *Memory) Allow(_ context.Context, key string) (Decision, error) {
	now := m.now().UnixMicro()
	m.mu.Lock()
	defer m.mu.Unlock()
	d, tat := gcra(m.rate, m.tat[key], now)
	m.tat[key] = tat
	if m.calls++; m.calls >= sweepEvery {
		m.calls = 0
		for k, v := range m.tat {
			if v <= now {
				delete(m.tat, k)
			}
		}
	}
	return d, nil
}

// keys reports how many keys are held (tests).
func (m *Memory) keys() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tat)
}
