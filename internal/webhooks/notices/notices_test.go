package notices_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/webhooks/notices"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// mailbox is a real SMTP server in-process, keeping what it receives.
type mailbox struct {
	mu   sync.Mutex
	msgs []received
}

type received struct {
	from string
	to   []string
	data string
}

func (b *mailbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{box: b}, nil }

func (b *mailbox) all() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.msgs...)
}

type session struct {
	box *mailbox
	cur received
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error { s.cur.from = from; return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = string(b)
	s.box.mu.Lock()
	s.box.msgs = append(s.box.msgs, s.cur)
	s.box.mu.Unlock()
	s.cur = received{}
	return nil
}
func (s *session) Reset()        { s.cur = received{} }
func (s *session) Logout() error { return nil }

// serve starts the server on a loopback port and returns its smtp:// URL.
func serve(t *testing.T, box *mailbox) (string, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := smtp.NewServer(box)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 5*time.Second, 5*time.Second
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "smtp://" + ln.Addr().String() + "?from=alerts@finsvc.test", ln
}

// TestNotices, on both dialects, with a real SMTP server: an endpoint that
// starts failing, and then is disabled, is mailed to the tenant's active
// admins once per change, with a link to its page; nothing is sent again
// while nothing changes; healthy again, its next failure is news; a
// message the server did not take is sent by the next run.
func TestNotices(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, tn := testdb.NewTenant(t, d, "acme")
		for i, u := range []struct{ email, role, deactivated string }{
			{"ada@acme.test", "admin", ""}, {"bob@acme.test", "admin", ""}, {"mem@acme.test", "member", ""}, {"old@acme.test", "admin", "x"},
		} {
			row := map[string]any{"tenant_id": tn.ID, "id": i + 1, "email": u.email, "name": u.email, "role": u.role, "password_hash": "!"}
			if u.deactivated != "" {
				row["deactivated_at"] = time.Now().UTC()
			}
			if err := d.Table("users").Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Table("webhooks").Create(map[string]any{"tenant_id": tn.ID, "id": 7, "event": "act.created", "target": "https://hooks.example.com/x",
			"description": "Ledger sync", "active": true, "secret_ciphertext": "x", "created_by_user_id": 1}).Error; err != nil {
			t.Fatal(err)
		}
		box := &mailbox{}
		u, ln := serve(t, box)
		m, err := notices.NewSMTP(u)
		if err != nil {
			t.Fatal(err)
		}
		link := func(slug string, id int64) string {
			return "https://" + slug + ".finsvc.test/console/webhooks/" + strconv.FormatInt(id, 10)
		}
		n := notices.New(d, m, link, testdb.Logger())
		run := func(want int) {
			t.Helper()
			if got, err := n.RunOnce(context.Background()); err != nil || got != want {
				t.Fatalf("RunOnce = %d, %v; want %d", got, err, want)
			}
		}
		hook := d.Table("webhooks").Where("tenant_id = ? AND id = 7", tn.ID)
		run(0) // healthy: nothing to say

		hook.Updates(map[string]any{"consecutive_failures": 1, "last_failure_reason": "target answered 503", "last_failure_at": time.Now().UTC(), "failing_since": time.Now().UTC()})
		run(1)
		hook = d.Table("webhooks").Where("tenant_id = ? AND id = 7", tn.ID)
		hook.Update("consecutive_failures", 2)
		run(0) // still failing: told already
		msgs := box.all()
		if len(msgs) != 1 || msgs[0].from != "alerts@finsvc.test" || strings.Join(msgs[0].to, ",") != "ada@acme.test,bob@acme.test" {
			t.Fatalf("failing: %+v", msgs)
		}
		body := strings.ReplaceAll(msgs[0].data, "=\r\n", "")
		for _, want := range []string{"Subject: finsvc: Webhook 7 (Ledger sync) is failing", "target answered 503", "https://acme.finsvc.test/console/webhooks/7"} {
			if !strings.Contains(body, want) {
				t.Errorf("the failing message lacks %q:\n%s", want, body)
			}
		}

		// Disabled by the service (a 410): one more message.
		if err := d.Tx(ctx, func(tx *gorm.DB) error {
			return registry.Disable(tx, tn.ID, 7, "target answered 410 Gone", time.Now().UTC())
		}); err != nil {
			t.Fatal(err)
		}
		run(1)
		run(0)
		if msgs = box.all(); len(msgs) != 2 || !strings.Contains(msgs[1].data, "Subject: finsvc: Webhook 7 (Ledger sync) was disabled") ||
			!strings.Contains(msgs[1].data, "target answered 410 Gone") {
			t.Fatalf("disabled: %+v", msgs)
		}

		// Enabled and healthy again: forgotten; the next failure is news,
		// and a message the server refused (down) goes with the next run.
		d.Table("webhooks").Where("tenant_id = ? AND id = 7", tn.ID).Updates(map[string]any{"active": true, "disabled_reason": nil, "consecutive_failures": 0})
		run(0)
		d.Table("webhooks").Where("tenant_id = ? AND id = 7", tn.ID).Update("consecutive_failures", 1)
		ln.Close()
		if got, _ := n.RunOnce(context.Background()); got != 0 {
			t.Fatalf("sent %d with the server down", got)
		}
		u2, _ := serve(t, box)
		m2, _ := notices.NewSMTP(u2)
		n = notices.New(d, m2, link, testdb.Logger())
		run(1)
		if msgs = box.all(); len(msgs) != 3 || !strings.Contains(msgs[2].data, "is failing") {
			t.Fatalf("after recovery: %d messages", len(msgs))
		}
	})
}

// TestNoticesOnceAcrossReplicas: replicas running the loop at the same
// moment send one message per change between them (the claim is a
// conditional UPDATE).
func TestNoticesOnceAcrossReplicas(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		_, tn := testdb.NewTenant(t, d, "acme")
		if err := d.Table("users").Create(map[string]any{"tenant_id": tn.ID, "id": 1, "email": "ada@acme.test", "name": "Ada", "role": "admin", "password_hash": "!"}).Error; err != nil {
			t.Fatal(err)
		}
		for id := 1; id <= 3; id++ {
			if err := d.Table("webhooks").Create(map[string]any{"tenant_id": tn.ID, "id": id, "event": "act.created", "target": "https://hooks.example.com/x",
				"active": true, "secret_ciphertext": "x", "created_by_user_id": 1, "consecutive_failures": 1, "last_failure_reason": "target answered 500"}).Error; err != nil {
				t.Fatal(err)
			}
		}
		box := &mailbox{}
		u, _ := serve(t, box)
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for range 4 {
			m, err := notices.NewSMTP(u)
			if err != nil {
				t.Fatal(err)
			}
			n := notices.New(d, m, func(slug string, id int64) string { return slug + strconv.FormatInt(id, 10) }, testdb.Logger())
			wg.Go(func() {
				sent, err := n.RunOnce(context.Background())
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += sent
				mu.Unlock()
			})
		}
		wg.Wait()
		if total != 3 || len(box.all()) != 3 {
			t.Fatalf("4 replicas sent %d (the server got %d), want one per endpoint: 3", total, len(box.all()))
		}
	})
}
