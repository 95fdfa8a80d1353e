package mfa_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

var cheap = users.WithHashParams(users.HashParams{MemoryKiB: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16})

// clock is a controlled clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }
func code(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type fixture struct {
	ctx   context.Context
	d     *db.DB
	s     *mfa.Store
	users *users.Store
	clk   *clock
	u     *users.User
}

func setup(t *testing.T, d *db.DB) *fixture {
	ctx, _ := testdb.NewTenant(t, d, "acme")
	ring, err := keyring.New("0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	box, err := sealing.NewFor(ring, mfa.SealPurpose)
	if err != nil {
		t.Fatal(err)
	}
	us := users.NewStore(d, cheap)
	u, err := us.Create(ctx, "ada@acme.example.com", "Ada", "admin", "cantaloupe in a red wheelbarrow")
	if err != nil {
		t.Fatal(err)
	}
	// Mid-step, so that the steps either side are whole.
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 15, 0, time.UTC)}
	s, err := mfa.New(d, box, us, "finsvc", mfa.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{ctx: ctx, d: d, s: s, users: us, clk: clk, u: u}
}

// enrol sets up an authenticator and returns its secret and recovery codes.
func (f *fixture) enrol(t *testing.T) (string, []string) {
	t.Helper()
	e, err := f.s.BeginTOTP(f.ctx, f.u.ID, f.u.Email)
	if err != nil {
		t.Fatal(err)
	}
	secret := e.Key.Secret()
	if _, err := f.s.ConfirmTOTP(f.ctx, f.u.ID, "000000"); !apperr.Is(err, apperr.Unauthenticated) && code(t, secret, f.clk.Now()) != "000000" {
		t.Fatalf("confirming with a wrong code: %v, want Unauthenticated", err)
	}
	rec, err := f.s.ConfirmTOTP(f.ctx, f.u.ID, code(t, secret, f.clk.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) != mfa.RecoveryCodes {
		t.Fatalf("%d recovery codes, want %d", len(rec), mfa.RecoveryCodes)
	}
	return secret, rec
}

// TestTOTP: enrolment is confirmed by a first code; a code is accepted
// once (the enrolment's own code, then any code of a step already used);
// one step of skew either way is accepted, two are not.
func TestTOTP(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		if st, _ := f.s.Status(f.ctx, f.u.ID); st.Has() {
			t.Fatal("a new user has a factor")
		}
		e, err := f.s.BeginTOTP(f.ctx, f.u.ID, f.u.Email)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); st.Has() {
			t.Fatal("an unconfirmed enrolment counts as a factor")
		}
		again, err := f.s.PendingTOTP(f.ctx, f.u.ID, f.u.Email)
		if err != nil || again.Key.Secret() != e.Key.Secret() {
			t.Fatalf("the pending enrolment's secret changed: %v", err)
		}
		secret := e.Key.Secret()
		first := code(t, secret, f.clk.Now())
		if _, err := f.s.ConfirmTOTP(f.ctx, f.u.ID, first); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); !st.Has() || st.RecoveryRemaining != 10 {
			t.Fatalf("status after enrolment %+v", st)
		}
		if _, err := f.s.BeginTOTP(f.ctx, f.u.ID, f.u.Email); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("a second enrolment: %v, want Conflict", err)
		}
		// The confirming code is spent.
		if _, err := f.s.Verify(f.ctx, f.u.ID, first); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("the enrolment's code again: %v, want Unauthenticated", err)
		}
		f.clk.Add(mfa.Period * time.Second)
		now := code(t, secret, f.clk.Now())
		if r, err := f.s.Verify(f.ctx, f.u.ID, now); err != nil || r.Method != mfa.MethodOTP {
			t.Fatalf("the next step's code: %+v, %v", r, err)
		}
		if _, err := f.s.Verify(f.ctx, f.u.ID, now); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("the same code again: %v, want Unauthenticated", err)
		}
		// Two steps later, the code of one step ago is accepted (skew),
		// that of two steps ago is not.
		f.clk.Add(3 * mfa.Period * time.Second)
		if _, err := f.s.Verify(f.ctx, f.u.ID, code(t, secret, f.clk.Now().Add(-2*mfa.Period*time.Second))); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("a code two steps old: %v, want Unauthenticated", err)
		}
		if _, err := f.s.Verify(f.ctx, f.u.ID, code(t, secret, f.clk.Now().Add(-mfa.Period*time.Second))); err != nil {
			t.Fatalf("a code one step old: %v", err)
		}
		// A code one step ahead (a fast phone) is accepted; after it, the
		// current step's code is older than the last accepted: refused.
		if _, err := f.s.Verify(f.ctx, f.u.ID, code(t, secret, f.clk.Now().Add(mfa.Period*time.Second))); err != nil {
			t.Fatalf("a code one step ahead: %v", err)
		}
		if _, err := f.s.Verify(f.ctx, f.u.ID, code(t, secret, f.clk.Now())); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("a code older than the last accepted: %v, want Unauthenticated", err)
		}
		if _, err := f.s.Verify(f.ctx, f.u.ID, code(t, secret, f.clk.Now().Add(2*mfa.Period*time.Second))); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("a code two steps ahead: %v, want Unauthenticated", err)
		}
		// Nothing readable at rest.
		var stored string
		if err := d.Raw("SELECT secret_ciphertext FROM mfa_totp").Scan(&stored).Error; err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stored, secret) || !strings.HasPrefix(stored, "v2:") {
			t.Fatalf("the stored secret is not sealed: %q", stored)
		}
	})
}

// TestRecoveryCodes: each works once, says how many remain, is stored
// hashed; regenerating replaces them all.
func TestRecoveryCodes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		_, rec := f.enrol(t)
		r, err := f.s.Verify(f.ctx, f.u.ID, strings.ToUpper(rec[3]))
		if err != nil || r.Method != mfa.MethodRecovery || r.RecoveryRemaining != 9 {
			t.Fatalf("a recovery code: %+v, %v", r, err)
		}
		if _, err := f.s.Verify(f.ctx, f.u.ID, rec[3]); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("the same recovery code again: %v, want Unauthenticated", err)
		}
		var hashes []string
		if err := d.Raw("SELECT code_hash FROM mfa_recovery_codes").Scan(&hashes).Error; err != nil {
			t.Fatal(err)
		}
		for _, h := range hashes {
			if !strings.HasPrefix(h, "$argon2id$") {
				t.Fatalf("a recovery code is not stored as a password hash: %q", h)
			}
		}
		fresh, err := f.s.RegenerateRecovery(f.ctx, f.u.ID)
		if err != nil || len(fresh) != 10 {
			t.Fatal(len(fresh), err)
		}
		if _, err := f.s.Verify(f.ctx, f.u.ID, rec[4]); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("an old recovery code after regeneration: %v, want Unauthenticated", err)
		}
		if r, err := f.s.Verify(f.ctx, f.u.ID, fresh[0]); err != nil || r.RecoveryRemaining != 9 {
			t.Fatalf("a new recovery code: %+v, %v", r, err)
		}
	})
}

// TestRemoveAndPolicy: an admin's removal leaves the user a notice (once);
// the user's own does not; the policy defaults to off, covers whom it
// says, and each change is audited once.
func TestRemoveAndPolicy(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		f.enrol(t)
		if err := f.s.Remove(f.ctx, audit.UserActor(f.u.ID+100), f.u.ID); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); st.Has() || st.RecoveryRemaining != 0 {
			t.Fatalf("status after removal %+v", st)
		}
		if ok, err := f.s.TakeResetNotice(f.ctx, f.u.ID); !ok || err != nil {
			t.Fatalf("notice after an admin's reset: %v %v", ok, err)
		}
		if ok, _ := f.s.TakeResetNotice(f.ctx, f.u.ID); ok {
			t.Fatal("the notice was given twice")
		}
		f.enrol(t)
		if err := f.s.Remove(f.ctx, audit.UserActor(f.u.ID), f.u.ID); err != nil {
			t.Fatal(err)
		}
		if ok, _ := f.s.TakeResetNotice(f.ctx, f.u.ID); ok {
			t.Fatal("the user's own removal left a notice")
		}

		if p, err := f.s.Policy(f.ctx); p != mfa.PolicyOff || err != nil {
			t.Fatalf("default policy %q %v", p, err)
		}
		if req, _ := f.s.Required(f.ctx, f.u.ID, "admin"); req {
			t.Fatal("required under the default policy")
		}
		for _, p := range []mfa.Policy{mfa.PolicyAdmins, mfa.PolicyAdmins, mfa.PolicyEveryone, mfa.PolicyOff} {
			if err := f.s.SetPolicy(f.ctx, p); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.s.Policy(f.ctx); got != p {
				t.Fatalf("policy %q, want %q", got, p)
			}
			if p == mfa.PolicyAdmins {
				if req, _ := f.s.Required(f.ctx, f.u.ID, "admin"); !req {
					t.Fatal("admins policy: an admin without a factor is not required to enrol")
				}
				if req, _ := f.s.Required(f.ctx, f.u.ID, "member"); req {
					t.Fatal("admins policy: a member is required to enrol")
				}
			}
		}
		if err := f.s.SetPolicy(f.ctx, "sometimes"); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("an unknown policy: %v, want Invalid", err)
		}
		var n int64
		if err := d.Model(&audit.Row{}).Where("action = ?", audit.MFAPolicyChanged).Count(&n).Error; err != nil || n != 3 {
			t.Fatalf("%d policy change records, want 3 (a repeat records nothing): %v", n, err)
		}
		var removed, failed int64
		d.Model(&audit.Row{}).Where("action = ?", audit.MFARemoved).Count(&removed)
		d.Model(&audit.Row{}).Where("action = ? AND outcome = ?", audit.MFAEnrolled, audit.Failure).Count(&failed)
		if removed != 2 || failed != 2 {
			t.Fatalf("removal records %d (want 2), failed enrolment records %d (want 2)", removed, failed)
		}
	})
}

// TestResealCovers: the TOTP secret is among the sealed columns the key
// ring's reseal rewrites, and opens after it.
func TestResealCovers(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		secret, _ := f.enrol(t)
		ring, err := keyring.Parse("fedcba9876543210fedcba9876543210", "0123456789abcdef0123456789abcdef", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := sealing.Reseal(f.ctx, d.DB, ring, mfa.SealedColumns(), 10, nil); err != nil {
			t.Fatal(err)
		}
		box, _ := sealing.NewFor(ring, mfa.SealPurpose)
		s2, _ := mfa.New(d, box, f.users, "finsvc", mfa.WithClock(f.clk.Now))
		f.clk.Add(mfa.Period * time.Second)
		if _, err := s2.Verify(f.ctx, f.u.ID, code(t, secret, f.clk.Now())); err != nil {
			t.Fatalf("verify after the reseal: %v", err)
		}
		counts, err := sealing.Status(f.ctx, d.DB, mfa.SealedColumns())
		if err != nil || len(counts) != 1 || counts[0].KeyID != ring.Current().ID {
			t.Fatalf("status after reseal: %+v %v", counts, err)
		}
	})
}

// TestCodeAcceptedOnceRacing: the same code sent by several requests at
// once is accepted by exactly one (the row lock orders them, and the
// others see the step already used); a recovery code likewise.
func TestCodeAcceptedOnceRacing(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		secret, rec := f.enrol(t)
		f.clk.Add(mfa.Period * time.Second)
		for _, c := range []string{code(t, secret, f.clk.Now()), rec[0]} {
			var wg sync.WaitGroup
			var mu sync.Mutex
			ok, refused := 0, 0
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := f.s.Verify(f.ctx, f.u.ID, c)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok++
					case apperr.Is(err, apperr.Unauthenticated):
						refused++
					default:
						t.Errorf("verify: %v", err)
					}
				}()
			}
			wg.Wait()
			if ok != 1 || refused != 7 {
				t.Fatalf("8 concurrent uses of one code: %d accepted, %d refused; want 1 and 7", ok, refused)
			}
		}
	})
}
