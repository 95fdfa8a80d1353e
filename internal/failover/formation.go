// Package failover runs a real PostgreSQL high-availability formation on
// loopback ports, for the tests that kill the database primary under load
// from real finsvc replicas (FINSVC_TEST_FAILOVER=1).
//
// The engine is pg_auto_failover (Debian's postgresql-15-auto-failover and
// pg-auto-failover-cli): a monitor and DataNodes data nodes with the
// formation's number-sync-standbys at 1, so the primary runs with
// synchronous_standby_names = 'ANY 1 (standby a, standby b)' and
// synchronous_commit = on. MonitorSettings holds every tuned health-check
// value in this one place; docs/operations.md repeats them for operators.
package failover

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// PGBin is where Debian installs the PostgreSQL 15 server binaries the
// pg_auto_failover package is built for.
const PGBin = "/usr/lib/postgresql/15/bin"

// Database is the database the formation creates for finsvc.
const Database = "finsvc"

// DataNodes is the formation that is shipped and tested: a primary and two
// standbys, with number-sync-standbys 1. With two data nodes
// pg_auto_failover can only run number-sync-standbys 0, and then clears
// synchronous_standby_names whenever the one standby is not assigned
// secondary (found unhealthy, catching up; the primary goes
// wait_primary): commits are acknowledged on the primary alone, and a
// failover or switchover in that moment loses them (a four-round run lost
// 200 acknowledged acts at a planned switchover, most likely so). With two standbys and number-sync-standbys 1 the
// primary keeps 'ANY 1 (both standbys)' while one standby is lost, and
// blocks writes, rather than running alone, while both are.
const DataNodes = 3

// NumberSyncStandbys is the formation's number-sync-standbys (see
// DataNodes).
const NumberSyncStandbys = 1

// MonitorSettings tune the monitor's health checks for a failover within a
// few seconds of a primary's loss (pg_auto_failover's defaults take about
// 50 s): a node is probed every second, one retry after 0.5 s, and declared
// unhealthy after 2 s without a successful probe; a primary that cannot be
// reached is considered demoted after 3 s, after which the standby is
// promoted. Values are in milliseconds.
var MonitorSettings = map[string]string{
	"pgautofailover.health_check_period":               "1000",
	"pgautofailover.health_check_timeout":              "1000",
	"pgautofailover.health_check_max_retries":          "1",
	"pgautofailover.health_check_retry_delay":          "500",
	"pgautofailover.node_considered_unhealthy_timeout": "2000",
	"pgautofailover.primary_demote_timeout":            "3000",
}

// Available says why a formation cannot run on this machine (nil: it can).
func Available() error {
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		return errors.New("pg_autoctl not found (install pg-auto-failover-cli and postgresql-15-auto-failover)")
	}
	if _, err := os.Stat(filepath.Join(PGBin, "postgres")); err != nil {
		return fmt.Errorf("%s/postgres not found (install postgresql-15)", PGBin)
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return errors.New("running as root and there is no postgres OS user to run the engine as (it refuses root)")
		}
	}
	return nil
}

// Node is one data node (a keeper and its PostgreSQL).
type Node struct {
	Name   string
	Port   int
	PGData string
	log    string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Formation is a running monitor and its data nodes.
type Formation struct {
	Dir     string
	Monitor *Node
	Nodes   []*Node
	cred    *syscall.Credential
	logf    func(format string, args ...any)
}

// Addr is the node's host:port.
func (n *Node) Addr() string { return fmt.Sprintf("127.0.0.1:%d", n.Port) }

// URL is a libpq URL for db on this node alone.
func (n *Node) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", n.Addr(), db)
}

// URL is the multi-host URL finsvc uses: every data node, and only a
// read-write session is accepted, so a client finds the primary wherever
// it is.
func (f *Formation) URL() string {
	hosts := make([]string, len(f.Nodes))
	for i, n := range f.Nodes {
		hosts[i] = n.Addr()
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2", strings.Join(hosts, ","), Database)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start creates a monitor and nodes data nodes under dir (which it makes
// reachable for the engine's OS user) and waits until one is primary and
// the others are synchronous secondaries; with three nodes or more it sets
// the formation's number-sync-standbys to NumberSyncStandbys and waits
// until the primary has applied it. logf receives progress lines. On
// error, what was started is stopped.
func Start(ctx context.Context, dir string, nodes int, logf func(string, ...any)) (f *Formation, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	f = &Formation{Dir: dir, logf: logf}
	defer func() {
		if err != nil {
			f.Close()
			f = nil
		}
	}()
	if os.Geteuid() == 0 {
		u, _ := user.Lookup("postgres")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		f.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		// The engine's user must reach dir: open its parents for traversal.
		for d := dir; d != "/" && d != "." && d != os.TempDir(); d = filepath.Dir(d) {
			if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o011 != 0o011 {
				_ = os.Chmod(d, st.Mode().Perm()|0o011)
			}
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return f, err
		}
	}
	mon, err := f.newNode("monitor")
	if err != nil {
		return f, err
	}
	f.Monitor = mon
	if err := mon.start(f, "create", "monitor", "--pgdata", mon.PGData, "--pgport", strconv.Itoa(mon.Port),
		"--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--run"); err != nil {
		return f, err
	}
	if err := f.waitSQL(ctx, mon.URL("pg_auto_failover"), "SELECT 1 FROM pgautofailover.formation", 60*time.Second); err != nil {
		return f, fmt.Errorf("monitor: %w\n%s", err, mon.Tail())
	}
	if err := f.tune(ctx); err != nil {
		return f, err
	}
	for i := range nodes {
		n, err := f.newNode(fmt.Sprintf("node%d", i+1))
		if err != nil {
			return f, err
		}
		f.Nodes = append(f.Nodes, n)
		if err := n.start(f, "create", "postgres", "--pgdata", n.PGData, "--pgport", strconv.Itoa(n.Port),
			"--hostname", "127.0.0.1", "--name", n.Name, "--dbname", Database,
			"--monitor", mon.URL("pg_auto_failover"), "--auth", "trust", "--no-ssl",
			"--pg-hba-lan", "--run"); err != nil {
			return f, err
		}
		want := "primary"
		if i == 0 {
			want = "single"
		}
		stop := make(chan struct{})
		if i > 0 {
			// pg_basebackup waits for the primary's next checkpoint, which
			// is minutes away on an idle primary; a CHECKPOINT makes it now.
			go f.checkpointLoop(f.Nodes[0], stop)
		}
		err = f.WaitStates(ctx, 90*time.Second, map[string]string{f.Nodes[0].Name: want})
		if err == nil && i > 0 {
			err = f.WaitStates(ctx, 90*time.Second, map[string]string{n.Name: "secondary"})
		}
		close(stop)
		if err != nil {
			return f, fmt.Errorf("%s: %w\n%s", n.Name, err, n.Tail())
		}
	}
	if nodes > 2 {
		if err := f.setNumberSyncStandbys(ctx, NumberSyncStandbys); err != nil {
			return f, err
		}
	}
	return f, nil
}

// setNumberSyncStandbys sets the formation's number-sync-standbys (the
// monitor already sets 1 when a third node registers: this says so rather
// than relying on it) and waits until the primary has applied it, with
// synchronous_standby_names 'ANY n (every standby)'.
func (f *Formation) setNumberSyncStandbys(ctx context.Context, n int) error {
	// What pg_autoctl set formation number-sync-standbys calls (pg_autoctl
	// 2.0 refuses every value given on its command line).
	db, err := sql.Open("pgx", f.Monitor.URL("pg_auto_failover"))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "SELECT pgautofailover.set_formation_number_sync_standbys('default', $1)", n); err != nil {
		return fmt.Errorf("number-sync-standbys %d: %w", n, err)
	}
	want := fmt.Sprintf("ANY %d (", n)
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, err := f.WaitHealthy(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		names, err := p.setting(ctx, "synchronous_standby_names")
		if err == nil && strings.HasPrefix(names, want) && strings.Count(names, ",") == len(f.Nodes)-2 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("number-sync-standbys %d: primary %s has synchronous_standby_names %q (%v)", n, p.Name, names, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setting reads a PostgreSQL setting on the node.
func (n *Node) setting(ctx context.Context, name string) (string, error) {
	db, err := sql.Open("pgx", n.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var v string
	err = db.QueryRowContext(qctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

func (f *Formation) newNode(name string) (*Node, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &Node{Name: name, Port: port, PGData: filepath.Join(f.Dir, name), log: filepath.Join(f.Dir, name+".log")}, nil
}

// tune applies MonitorSettings to the monitor.
func (f *Formation) tune(ctx context.Context) error {
	db, err := sql.Open("pgx", f.Monitor.URL("pg_auto_failover"))
	if err != nil {
		return err
	}
	defer db.Close()
	for k, v := range MonitorSettings {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", k, v)); err != nil {
			return fmt.Errorf("monitor %s: %w", k, err)
		}
	}
	_, err = db.ExecContext(ctx, "SELECT pg_reload_conf()")
	return err
}

func (f *Formation) checkpointLoop(n *Node, stop chan struct{}) {
	db, err := sql.Open("pgx", n.URL("postgres"))
	if err != nil {
		return
	}
	defer db.Close()
	for {
		select {
		case <-stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = db.ExecContext(ctx, "CHECKPOINT")
		cancel()
	}
}

func (f *Formation) env() []string {
	return []string{
		"PATH=" + PGBin + ":/usr/bin:/bin",
		"HOME=" + f.Dir,
		// The keepers' configuration and state live in the formation's
		// directory, not in the OS user's home.
		"XDG_CONFIG_HOME=" + filepath.Join(f.Dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(f.Dir, "share"),
		"PG_CONFIG=" + filepath.Join(PGBin, "pg_config"),
	}
}

func (f *Formation) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "pg_autoctl", args...)
	cmd.Env = f.env()
	cmd.Dir = f.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: f.cred}
	return cmd
}

// Ctl runs a pg_autoctl command to its end (e.g. "perform", "switchover").
func (f *Formation) Ctl(ctx context.Context, args ...string) (string, error) {
	out, err := f.command(ctx, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("pg_autoctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (n *Node) start(f *Formation, args ...string) error {
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := f.command(context.Background(), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	return nil
}

// Rejoin starts the node's keeper again after a crash (pg_autoctl run),
// which rewinds the node (or, when it cannot, rebuilds it with a base
// backup) as a standby of the current primary, and waits until the
// formation is healthy again.
func (f *Formation) Rejoin(ctx context.Context, n *Node, timeout time.Duration) error {
	// The primary, once the monitor and it agree (a new primary goes
	// wait_primary → primary as the other standby joins it).
	deadline := time.Now().Add(timeout)
	var primary *Node
	for {
		p, err := f.Primary(ctx)
		if err == nil {
			primary = p
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := n.start(f, "run", "--pgdata", n.PGData); err != nil {
		return err
	}
	// A rebuild's base backup, and a rewind's, start at the primary's next
	// checkpoint: make it now.
	stop := make(chan struct{})
	defer close(stop)
	go f.checkpointLoop(primary, stop)
	_, err := f.WaitHealthy(ctx, time.Until(deadline))
	return err
}

// Tail is the end of the node's log.
func (n *Node) Tail() string {
	b, _ := os.ReadFile(n.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// CrashHost ends every process of the node at once with SIGKILL (the host
// lost its power): the keeper, its services and PostgreSQL with all its
// backends. Each is stopped first so that none restarts another.
func (f *Formation) CrashHost(n *Node) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	pids := descendants(cmd.Process.Pid)
	if pm := n.postmaster(); pm > 0 {
		pids = append(pids, pm)
		pids = append(pids, descendants(pm)...)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	<-done
}

// CrashPostgres ends the node's postmaster with SIGKILL; its keeper stays
// and restarts it.
func (f *Formation) CrashPostgres(n *Node) error {
	pm := n.postmaster()
	if pm <= 0 {
		return fmt.Errorf("%s: no postmaster.pid", n.Name)
	}
	return syscall.Kill(pm, syscall.SIGKILL)
}

func (n *Node) postmaster() int {
	b, err := os.ReadFile(filepath.Join(n.PGData, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// descendants lists every process below pid (and pid itself), from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fh, err := os.Open(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		line, _ := bufio.NewReader(fh).ReadString('\n')
		fh.Close()
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		if i := strings.LastIndexByte(line, ')'); i > 0 {
			fields := strings.Fields(line[i+1:])
			if len(fields) > 1 {
				if pp, err := strconv.Atoi(fields[1]); err == nil {
					children[pp] = append(children[pp], p)
				}
			}
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// Close ends every process of the formation (SIGKILL: nothing of it is
// kept).
func (f *Formation) Close() {
	for _, n := range f.Nodes {
		f.CrashHost(n)
	}
	if f.Monitor != nil {
		f.CrashHost(f.Monitor)
	}
}

// State is a data node as the monitor sees it.
type State struct {
	Name, Reported, Assigned string
	Port                     int
	Healthy                  bool
}

// States reads every data node's state from the monitor.
func (f *Formation) States(ctx context.Context) ([]State, error) {
	db, err := sql.Open("pgx", f.Monitor.URL("pg_auto_failover"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT nodename, nodeport, reportedstate::text, goalstate::text, health = 1 FROM pgautofailover.node ORDER BY nodeid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []State
	for rows.Next() {
		var s State
		if err := rows.Scan(&s.Name, &s.Port, &s.Reported, &s.Assigned, &s.Healthy); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// WaitStates waits until every named node reports and is assigned the
// given state.
func (f *Formation) WaitStates(ctx context.Context, timeout time.Duration, want map[string]string) error {
	deadline := time.Now().Add(timeout)
	var last []State
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		states, err := f.States(qctx)
		cancel()
		if err == nil {
			last = states
			ok := 0
			for _, s := range states {
				if w, found := want[s.Name]; found && s.Reported == w && s.Assigned == w {
					ok++
				}
			}
			if ok == len(want) {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("states %+v not reached within %v: %+v (%v)", want, timeout, last, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Events is the monitor's event log (pg_autoctl show events), oldest
// first, from the given time on: each line the time, the node, its
// reported and assigned states and the monitor's description.
func (f *Formation) Events(ctx context.Context, since time.Time) ([]string, error) {
	db, err := sql.Open("pgx", f.Monitor.URL("pg_auto_failover"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT to_char(eventtime, 'HH24:MI:SS.MS'), nodename, reportedstate::text, goalstate::text, description
		FROM pgautofailover.event WHERE eventtime >= $1 ORDER BY eventid`, since)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var at, node, reported, goal, desc string
		if err := rows.Scan(&at, &node, &reported, &goal, &desc); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s %s %s→%s %s", at, node, reported, goal, desc))
	}
	return out, rows.Err()
}

// Primary is the node the monitor has as the writable primary, with a
// synchronous standby (primary) or, while none is there, without
// (wait_primary: commits are acknowledged on the primary alone).
func (f *Formation) Primary(ctx context.Context) (*Node, error) {
	states, err := f.States(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range states {
		if s.Reported == s.Assigned && (s.Reported == "primary" || s.Reported == "wait_primary") {
			return f.node(s.Name), nil
		}
	}
	return nil, fmt.Errorf("no primary: %+v", states)
}

// WaitHealthy waits until one node is primary and every other is secondary.
func (f *Formation) WaitHealthy(ctx context.Context, timeout time.Duration) (primary *Node, err error) {
	deadline := time.Now().Add(timeout)
	for {
		states, err := f.States(ctx)
		if err == nil {
			var p *Node
			sec := 0
			for _, s := range states {
				switch {
				case s.Reported == "primary" && s.Assigned == "primary":
					p = f.node(s.Name)
				case s.Reported == "secondary" && s.Assigned == "secondary":
					sec++
				}
			}
			if p != nil && sec == len(f.Nodes)-1 {
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("formation not healthy within %v: %+v (%v)", timeout, states, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (f *Formation) node(name string) *Node {
	for _, n := range f.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func (f *Formation) waitSQL(ctx context.Context, url, query string, timeout time.Duration) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(timeout)
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = db.ExecContext(qctx, query)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
