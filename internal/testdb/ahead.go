package testdb

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Test databases are made one ahead and dropped behind. Creating one from
// the template and dropping it each cost PostgreSQL most of a second,
// mostly waiting on the disk; a test binary of a hundred tests on both
// dialects would otherwise wait for two hundred of each in turn. A
// database made ahead and not taken, or one still queued for dropping when
// the process exits, is left behind: its name carries its creation time,
// and the next process drops those older than leftoverAge.

// leftoverAge is how old a test database must be before another process
// drops it as left behind (twice the longest test binary timeout CI allows).
const leftoverAge = time.Hour

// testDBPrefix names every database Postgres hands out.
const testDBPrefix = "finsvc_test_"

type made struct {
	name string
	err  error
}

var (
	aheadMu sync.Mutex
	aheads  = map[string]chan made{} // by admin URL and template
	dropper = sync.OnceValue(func() chan dropReq {
		ch := make(chan dropReq, 64)
		go func() {
			for r := range ch {
				ctx, cancel := ctxTimeout(time.Minute)
				_, _ = r.admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoteIdent(r.name)+` WITH (FORCE)`)
				cancel()
			}
		}()
		return ch
	})
)

type dropReq struct {
	admin *sql.DB
	name  string
}

// takeDatabase returns a database cloned from tmpl, made while the previous
// test ran, and starts making the next one.
func takeDatabase(admin *sql.DB, adminURL, tmpl string) (string, error) {
	key := adminURL + "\x00" + tmpl
	aheadMu.Lock()
	ch, ok := aheads[key]
	if !ok {
		ch = make(chan made) // unbuffered: one made ahead, no more
		aheads[key] = ch
		go func() {
			for {
				name := testDBPrefix + strconv.FormatInt(time.Now().Unix(), 10) + "_" + randomSuffix()
				ctx, cancel := ctxTimeout(time.Minute)
				err := createDatabase(ctx, admin, name, tmpl)
				cancel()
				ch <- made{name, err}
			}
		}()
	}
	aheadMu.Unlock()
	m := <-ch
	return m.name, m.err
}

// dropBehind queues name for dropping without waiting for it.
func dropBehind(admin *sql.DB, name string) { dropper() <- dropReq{admin, name} }

// dropLeftovers drops the test databases of earlier processes older than
// leftoverAge (best effort; once per process and admin URL).
func dropLeftovers(ctx context.Context, admin *sql.DB, now time.Time) {
	rows, err := admin.QueryContext(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'finsvc\_test\_%'`)
	if err != nil {
		return
	}
	var old []string
	for rows.Next() {
		var name string
		if rows.Scan(&name) != nil {
			continue
		}
		if created, ok := createdAt(name); ok && now.Sub(created) > leftoverAge {
			old = append(old, name)
		}
	}
	rows.Close()
	for _, name := range old {
		_, _ = admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoteIdent(name)+` WITH (FORCE)`)
	}
}

// createdAt reads the creation time from a test database's name
// (finsvc_test_<unix seconds>_<random>); names of other shapes are not
// ours to drop.
func createdAt(name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, testDBPrefix)
	if !ok {
		return time.Time{}, false
	}
	secs, _, ok := strings.Cut(rest, "_")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}
