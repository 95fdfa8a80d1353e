package db

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// escapeCheck catches, in test binaries, a statement that escapes an
// ambient transaction: run on the plain pool by the goroutine that holds
// one open. Code inside InTx's fn runs on InTx's goroutine, so such a
// statement belongs to the same request but lost the transaction from its
// context; outside a test binary nothing is tracked.
type escapeCheck struct {
	open    atomic.Int64 // ambient transactions open (fast path: none)
	mu      sync.Mutex
	holders map[uint64]int // goroutine id → ambient transactions it holds
	escaped []string       // the statements refused
}

// checkEscapes is on in test binaries only: it reads the goroutine id off a
// stack trace, which is for tests.
var checkEscapes = testing.Testing()

func (d *DB) ambientPool() *ambientPool {
	p, _ := d.DB.Config.ConnPool.(*ambientPool)
	return p
}

func (d *DB) openAmbient(*ambient) {
	if p := d.ambientPool(); p != nil && checkEscapes {
		p.escapes.hold(goid(), 1)
	}
}

func (d *DB) closeAmbient(*ambient) {
	if p := d.ambientPool(); p != nil && checkEscapes {
		p.escapes.hold(goid(), -1)
	}
}

func (e *escapeCheck) hold(g uint64, delta int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holders == nil {
		e.holders = map[uint64]int{}
	}
	e.holders[g] += delta
	if e.holders[g] <= 0 {
		delete(e.holders, g)
	}
	e.open.Add(int64(delta))
}

// check refuses query when its goroutine holds an ambient transaction open.
func (e *escapeCheck) check(query string) error {
	if !checkEscapes || e.open.Load() == 0 {
		return nil
	}
	g := goid()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holders[g] == 0 {
		return nil
	}
	e.escaped = append(e.escaped, query)
	return ErrEscapedTx
}

// TakeEscapes returns and forgets the statements refused so far (test
// binaries only) for running outside the ambient transaction their
// goroutine held open. internal/testdb fails a test that leaves any.
func (d *DB) TakeEscapes() []string {
	p := d.ambientPool()
	if p == nil {
		return nil
	}
	p.escapes.mu.Lock()
	defer p.escapes.mu.Unlock()
	e := p.escapes.escaped
	p.escapes.escaped = nil
	return e
}

// goid is the calling goroutine's id, read off its stack trace's header
// ("goroutine 42 [running]:").
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
