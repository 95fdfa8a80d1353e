package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
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
// the process exits, is left behind: its name carries its creation time
// and its process's owner number, which the process holds as a session
// advisory lock until it exits. The next process drops those whose owner
// lock is free (their process is gone), and any older than leftoverAge.
// CI drops the last process's by tag (EnvDatabaseTag) when it ends.

// leftoverAge is how old a test database must be before another process
// drops it as left behind whatever its owner (twice the longest test
// binary timeout CI allows).
const leftoverAge = time.Hour

// ownerLockClass is the first key of the owner locks (an arbitrary
// constant: "fins" in ASCII); the second is the owner number.
const ownerLockClass = 0x66696e73

// processOwner is this process's owner number, random.
var processOwner = sync.OnceValue(func() int32 {
	var b [4]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		panic(err)
	}
	return int32(binary.BigEndian.Uint32(b[:]))
})

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
				name, err := databaseName(time.Now())
				if err == nil {
					ctx, cancel := ctxTimeout(time.Minute)
					err = createDatabase(ctx, admin, name, tmpl)
					cancel()
				}
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

// databaseName names a test database made at now by this process:
// finsvc_test_<unix seconds>_<owner, 8 hex digits>_<random>[_<tag>].
func databaseName(now time.Time) (string, error) {
	tag, err := tagSuffix()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s%d_%08x_%s%s", testDBPrefix, now.Unix(), uint32(processOwner()), randomSuffix(), tag), nil
}

// dropLeftovers drops the test databases of earlier processes: those whose
// owner has exited, and those older than leftoverAge (best effort; once
// per process and admin URL).
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
		created, ok := createdAt(name)
		if !ok {
			continue
		}
		if now.Sub(created) > leftoverAge {
			old = append(old, name)
		} else if owner, ok := ownerOf(name); ok && owner != processOwner() && ownerGone(ctx, admin, owner) {
			old = append(old, name)
		}
	}
	rows.Close()
	for _, name := range old {
		_, _ = admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoteIdent(name)+` WITH (FORCE)`)
	}
}

// ownerGone reports whether no session holds owner's lock: the process
// that made the database has exited. A live owner's lock is held from
// before it makes its first database until its session ends. pg_locks
// shows the locks of every database of the server, so a process whose
// admin database is another one is seen too.
func ownerGone(ctx context.Context, admin *sql.DB, owner int32) bool {
	var held bool
	err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
WHERE locktype = 'advisory' AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 2)`,
		int64(ownerLockClass), int64(uint32(owner))).Scan(&held)
	return err == nil && !held
}

// ownerOf reads the owner number from a test database's name; names of an
// older shape (finsvc_test_<unix seconds>_<random>) have none.
func ownerOf(name string) (int32, bool) {
	rest, ok := strings.CutPrefix(name, testDBPrefix)
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, "_")
	if len(parts) < 3 || len(parts[1]) != 8 {
		return 0, false
	}
	n, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil {
		return 0, false
	}
	return int32(uint32(n)), true
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
