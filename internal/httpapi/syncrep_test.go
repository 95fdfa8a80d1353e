package httpapi_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"gorm.io/gorm"
)

// pgBin holds the PostgreSQL server programs the synchronous-standby test
// runs.
const pgBin = "/usr/lib/postgresql/15/bin"

// A replay is never a 2xx while the synchronous standby lacks the write it
// confirms. A primary and a synchronous standby are made with PostgreSQL's
// own tools on loopback ports. The standby's WAL receiver is paused, so
// that a keyed POST's COMMIT is written on the primary and waits for the
// standby; the primary's postmaster is killed (-9) and restarted, and now
// shows the row the standby never received. The retry with the key finds
// the stored outcome: it answers 503 outcome_unknown, not the stored 201,
// for as long as the standby lacks the row, and replays the 201 once the
// receiver runs again and the standby has it. (It caught that a barrier
// taking only a transaction id waits for nothing: see db.DurableSQL.)
func TestReplayNotBeforeTheSynchronousStandby(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgBin, "pg_basebackup")); err != nil {
		t.Skipf("PostgreSQL 15 server programs not found in %s (Debian package postgresql-15)", pgBin)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run PostgreSQL as the postgres OS user")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("runuser not found")
	}
	f := newFormation(t)
	d, err := db.Open(t.Context(), f.url(f.primaryPort, "finsvc"), "", testdb.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The delivery worker and the token cache LISTEN on this server.
	env := apitest.New(t, apitest.WithDB(d), apitest.WithConfig(func(c *config.Config) {
		c.DatabaseDirectURL = f.url(f.primaryPort, "finsvc")
	}))
	acme := env.Tenant("acme")
	tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)
	standby, err := sql.Open("pgx", f.url(f.standbyPort, "finsvc"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standby.Close() })
	onStandby := func() int64 {
		t.Helper()
		var n int64
		if err := standby.QueryRow(`SELECT count(*) FROM clients`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	receiver := f.walReceiver(t)
	if err := syscall.Kill(receiver, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = syscall.Kill(receiver, syscall.SIGCONT)
		}
	})
	first := make(chan *apitest.Response, 1)
	go func() { first <- acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("syncrep-1")) }()
	f.waitSyncRep(t)
	f.crashPrimary(t)
	// The connection was lost while the COMMIT waited: the outcome is
	// unknown, not a 500.
	r := <-first
	if e := r.Err(t); r.Code != http.StatusServiceUnavailable || e.Code != models.ErrorCodeOutcomeUnknown {
		t.Fatalf("the POST whose COMMIT never completed: %d %s; want 503 outcome_unknown", r.Code, r.Body)
	}
	f.startPrimary(t)

	var primaryRows int64
	if err := d.DB.Raw(`SELECT count(*) FROM clients`).Scan(&primaryRows).Error; err != nil {
		t.Fatal(err)
	}
	if primaryRows != 1 || onStandby() != 0 {
		t.Fatalf("after the crash: %d clients on the primary, %d on the standby; want 1 and 0", primaryRows, onStandby())
	}
	r = acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("syncrep-1"))
	if r.Code != http.StatusServiceUnavailable {
		t.Fatalf("retry while the standby lacks the row: %d %s; want 503", r.Code, r.Body)
	}
	if e := r.Err(t); e.Code != models.ErrorCodeOutcomeUnknown || r.Header.Get("Retry-After") == "" {
		t.Fatalf("retry while the standby lacks the row: code %v, Retry-After %q; want outcome_unknown", e.Code, r.Header.Get("Retry-After"))
	}
	if n := onStandby(); n != 0 {
		t.Fatalf("the standby has %d clients while its receiver is paused", n)
	}

	if err := syscall.Kill(receiver, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		r = acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("syncrep-1"))
		if r.Code < 300 {
			break
		}
		if r.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("retry after the receiver resumed: %d %s", r.Code, r.Body)
		}
	}
	if r.Code != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after the receiver resumed: %d, replayed %q; want a 201 replay", r.Code, r.Header.Get("Idempotent-Replayed"))
	}
	if n := onStandby(); n != 1 {
		t.Fatalf("a 201 was replayed while the standby holds %d clients", n)
	}
}

// A COMMIT that PostgreSQL acknowledged without the synchronous standby is
// never answered 2xx. PostgreSQL answers a COMMIT whose wait for the
// standby is cancelled (a cancel request: statement_timeout,
// pg_cancel_backend, a driver cancelling on its context) with success and
// a WARNING: the row is on the primary only. With the standby's receiver
// paused, a keyed POST's COMMIT waits; its backend's wait is cancelled: the
// answer is 503 outcome_unknown, while the primary has the row and the
// standby does not. And a transaction whose context ends while its COMMIT
// waits for the standby ends in db.ErrOutcomeUnknown, never in success.
func TestCommitNotAcknowledgedWithoutTheStandby(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgBin, "pg_basebackup")); err != nil {
		t.Skipf("PostgreSQL 15 server programs not found in %s (Debian package postgresql-15)", pgBin)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run PostgreSQL as the postgres OS user")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("runuser not found")
	}
	f := newFormation(t)
	d, err := db.Open(t.Context(), f.url(f.primaryPort, "finsvc"), "", testdb.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Exec(`CREATE TABLE commit_probe (n int)`).Error; err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, apitest.WithDB(d), apitest.WithConfig(func(c *config.Config) {
		c.DatabaseDirectURL = f.url(f.primaryPort, "finsvc")
	}))
	acme := env.Tenant("acme")
	tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsRead, auth.ScopeClientsWrite)
	standby, err := sql.Open("pgx", f.url(f.standbyPort, "finsvc"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standby.Close() })
	admin, err := sql.Open("pgx", f.url(f.primaryPort, "finsvc"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	count := func(q *sql.DB, query string) int64 {
		t.Helper()
		var n int64
		if err := q.QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	receiver := f.walReceiver(t)
	if err := syscall.Kill(receiver, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(receiver, syscall.SIGCONT) })

	// The wait is cancelled on the server: success and a WARNING.
	answer := make(chan *apitest.Response, 1)
	go func() { answer <- acme.DoHeader("POST", "/api/1.0/clients", tok, nordic, withKey("syncrep-cancel")) }()
	f.waitSyncRep(t)
	var cancelled int64
	if err := admin.QueryRow(`SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&cancelled); err != nil || cancelled != 1 {
		t.Fatalf("cancelling the COMMIT's wait: %d cancelled, %v; want 1", cancelled, err)
	}
	r := <-answer
	if e := r.Err(t); r.Code != http.StatusServiceUnavailable || e.Code != models.ErrorCodeOutcomeUnknown || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the POST whose wait for the standby was cancelled: %d %s (Retry-After %q); want 503 outcome_unknown", r.Code, r.Body, r.Header.Get("Retry-After"))
	}
	if p, s := count(admin, `SELECT count(*) FROM clients`), count(standby, `SELECT count(*) FROM clients`); p != 1 || s != 0 {
		t.Fatalf("after the cancelled wait: %d clients on the primary, %d on the standby; want 1 and 0 (else the test proves nothing)", p, s)
	}

	// The transaction's context ends while its COMMIT waits.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- d.InTx(ctx, func(_ db.TxContext, tx *gorm.DB) error {
			return tx.Exec(`INSERT INTO commit_probe VALUES (1)`).Error
		})
	}()
	f.waitSyncRep(t)
	cancel()
	if err := <-done; !db.IsOutcomeUnknown(err) {
		t.Fatalf("a transaction whose context ended during its COMMIT: %v; want db.ErrOutcomeUnknown", err)
	}
	if n := count(standby, `SELECT count(*) FROM commit_probe`); n != 0 {
		t.Fatalf("the standby has %d probe rows while its receiver is paused", n)
	}
}

// formation is a primary and its synchronous standby in a temp dir.
type formation struct {
	dir                      string
	primaryPort, standbyPort int
}

func newFormation(t *testing.T) *formation {
	t.Helper()
	dir := t.TempDir()
	// The postgres user must reach the directory: t.TempDir's parent is
	// root's, mode 0700.
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, pgUID(t), -1); err != nil {
		t.Fatal(err)
	}
	f := &formation{dir: dir, primaryPort: freePort(t), standbyPort: freePort(t)}
	primary, standby := f.path("primary"), f.path("standby")
	f.asPostgres(t, "initdb", "-D", primary, "-U", "postgres", "--auth=trust", "--no-sync")
	f.appendConf(t, primary, fmt.Sprintf(`port = %d
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
synchronous_standby_names = 'standby1'
synchronous_commit = on
fsync = off
`, f.primaryPort, dir))
	t.Cleanup(func() { f.stop(primary); f.stop(standby) })
	f.startPrimary(t)
	f.asPostgres(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(f.primaryPort), "-U", "postgres",
		"-D", standby, "-R", "-X", "stream", "-c", "fast")
	f.appendConf(t, standby, fmt.Sprintf(`port = %d
wal_retrieve_retry_interval = '100ms'
primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=standby1'
`, f.standbyPort, f.primaryPort))
	f.asPostgres(t, "pg_ctl", "start", "-w", "-D", standby, "-l", f.path("standby.log"))
	admin, err := sql.Open("pgx", f.url(f.primaryPort, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE finsvc`); err != nil { // waits for the standby
		t.Fatal(err)
	}
	return f
}

func (f *formation) path(name string) string { return filepath.Join(f.dir, name) }

func (f *formation) url(port int, database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, database)
}

func (f *formation) asPostgres(t *testing.T, prog string, args ...string) {
	t.Helper()
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(pgBin, prog)}, args...)...)
	cmd.Dir = f.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
	}
}

func (f *formation) appendConf(t *testing.T, dataDir, conf string) {
	t.Helper()
	file, err := os.OpenFile(filepath.Join(dataDir, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(conf); err != nil {
		t.Fatal(err)
	}
}

func (f *formation) startPrimary(t *testing.T) {
	t.Helper()
	// After a kill -9 the old backends may hold the shared memory for a
	// moment: try again until they are gone.
	deadline := time.Now().Add(15 * time.Second)
	for {
		cmd := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(pgBin, "pg_ctl"), "start", "-w",
			"-D", f.path("primary"), "-l", f.path("primary.log"))
		out, err := cmd.CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(f.path("primary.log"))
			t.Fatalf("start the primary: %v\n%s\n%s", err, out, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (f *formation) stop(dataDir string) {
	_ = exec.Command("runuser", "-u", "postgres", "--", filepath.Join(pgBin, "pg_ctl"), "stop", "-m", "immediate", "-D", dataDir).Run()
}

// postmaster is the pid in dataDir's postmaster.pid.
func (f *formation) postmaster(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// walReceiver is the pid of the standby's WAL receiver.
func (f *formation) walReceiver(t *testing.T) int {
	t.Helper()
	parent := strconv.Itoa(f.postmaster(t, f.path("standby")))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			// pid (comm) state ppid …
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			if i < 0 {
				continue
			}
			fields := strings.Fields(s[i+1:])
			if len(fields) < 2 || fields[1] != parent {
				continue
			}
			dir := filepath.Dir(p)
			cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
			if strings.Contains(string(cmdline), "walreceiver") {
				pid, _ := strconv.Atoi(filepath.Base(dir))
				return pid
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no WAL receiver on the standby")
	return 0
}

// waitSyncRep waits until a backend of the primary waits for the standby.
func (f *formation) waitSyncRep(t *testing.T) {
	t.Helper()
	admin, err := sql.Open("pgx", f.url(f.primaryPort, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no COMMIT waits for the standby")
}

func (f *formation) crashPrimary(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(f.postmaster(t, f.path("primary")), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

func pgUID(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("id", "-u", "postgres").Output()
	if err != nil {
		t.Skipf("no postgres OS user: %v", err)
	}
	uid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
