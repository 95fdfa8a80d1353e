package users_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

var cheap = users.WithHashParams(users.HashParams{MemoryKiB: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16})

// TestOneTimePassword: a generated password signs in once, and that
// sign-in requires choosing a password (without the current one); it
// expires after OneTimePasswordTTL; an admin's new one-time password
// replaces any password and ends the user's sessions.
func TestOneTimePassword(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(by time.Duration) { mu.Lock(); now = now.Add(by); mu.Unlock() }
		var ended []int64
		s := users.NewStore(d, cheap, users.WithClock(clock), users.WithSessionEnder(func(_ context.Context, id int64) error {
			ended = append(ended, id)
			return nil
		}))
		u, otp, err := s.CreateWithPassword(ctx, "ola@acme.example.com", "Ola", "member", "")
		if err != nil || otp == "" {
			t.Fatal(otp, err)
		}
		got, err := s.Authenticate(ctx, u.Email, otp)
		if err != nil || !got.PasswordChangeRequired {
			t.Fatalf("first sign-in with the one-time password = %+v, %v; want one that must choose a password", got, err)
		}
		if _, err := s.Authenticate(ctx, u.Email, otp); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("second sign-in with the one-time password = %v, want Unauthenticated", err)
		}
		if got, _ := s.Get(ctx, u.ID); !got.PasswordChangeRequired {
			t.Fatal("the stored user need not choose a password")
		}
		// Choosing: no current password needed, the policy applies.
		if err := s.ChangePassword(ctx, u.ID, "", "Qwerty123456"); fieldMsg(err, "password") == "" {
			t.Fatalf("a common password was chosen: %v", err)
		}
		if err := s.ChangePassword(ctx, u.ID, "", "cantaloupe in a red wheelbarrow"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Authenticate(ctx, u.Email, "cantaloupe in a red wheelbarrow"); err != nil || got.PasswordChangeRequired {
			t.Fatalf("sign-in with the chosen password = %+v, %v", got, err)
		}
		advance(1000 * time.Hour) // a chosen password does not expire
		if _, err := s.Authenticate(ctx, u.Email, "cantaloupe in a red wheelbarrow"); err != nil {
			t.Fatalf("chosen password after 1000 h: %v", err)
		}

		// A change needs the current password, and a new one.
		if err := s.ChangePassword(ctx, u.ID, "wrong horse battery staple", "blue kettle on a quiet harbor"); fieldMsg(err, "current_password") == "" {
			t.Fatalf("change with a wrong current password: %v", err)
		}
		if err := s.ChangePassword(ctx, u.ID, "cantaloupe in a red wheelbarrow", "cantaloupe in a red wheelbarrow"); fieldMsg(err, "password") == "" {
			t.Fatalf("change to the same password: %v", err)
		}
		if err := s.ChangePassword(ctx, u.ID, "cantaloupe in a red wheelbarrow", "blue kettle on a quiet harbor"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(ctx, u.Email, "cantaloupe in a red wheelbarrow"); err == nil {
			t.Fatal("the old password works after a change")
		}

		// An admin's new one-time password: the chosen one stops working,
		// sessions end, and it expires after 72 h unused.
		otp2, expires, err := s.IssueOneTimePassword(ctx, u.ID)
		if err != nil || otp2 == "" || !expires.Equal(db.Clock(clock).Now().Add(users.OneTimePasswordTTL)) {
			t.Fatalf("IssueOneTimePassword = %q, %v, %v", otp2, expires, err)
		}
		if len(ended) != 1 || ended[0] != u.ID {
			t.Errorf("sessions ended for %v, want [%d]", ended, u.ID)
		}
		if _, err := s.Authenticate(ctx, u.Email, "blue kettle on a quiet harbor"); err == nil {
			t.Fatal("the chosen password works after a new one-time password")
		}
		advance(users.OneTimePasswordTTL - time.Minute)
		otp3, _, err := s.IssueOneTimePassword(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(ctx, u.Email, otp2); err == nil {
			t.Fatal("a replaced one-time password works")
		}
		advance(users.OneTimePasswordTTL)
		if _, err := s.Authenticate(ctx, u.Email, otp3); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("an expired one-time password = %v, want Unauthenticated", err)
		}
		otp4, _, _ := s.IssueOneTimePassword(ctx, u.ID)
		advance(users.OneTimePasswordTTL - time.Second)
		if got, err := s.Authenticate(ctx, u.Email, otp4); err != nil || !got.PasswordChangeRequired {
			t.Fatalf("a one-time password a second before it expires = %+v, %v", got, err)
		}

		// None for a deactivated user, nor another tenant's.
		other, _ := testdb.NewTenant(t, d, "other")
		if _, _, err := s.IssueOneTimePassword(other, u.ID); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("another tenant's user: %v", err)
		}
		if _, err := s.Create(ctx, "admin@acme.example.com", "", "admin", "pale orange kettle"); err != nil {
			t.Fatal(err)
		}
		if err := s.Deactivate(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.IssueOneTimePassword(ctx, u.ID); !apperr.Is(err, apperr.Conflict) {
			t.Errorf("deactivated user: %v", err)
		}
	})
}

// TestOneTimePasswordRace: of sign-ins racing with one one-time password,
// exactly one gets in.
func TestOneTimePasswordRace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		s := users.NewStore(d, cheap)
		u, otp, err := s.CreateWithPassword(ctx, "ola@acme.example.com", "", "member", "")
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Authenticate(ctx, u.Email, otp); err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				} else if !apperr.Is(err, apperr.Unauthenticated) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if ok != 1 {
			t.Fatalf("%d of %d racing sign-ins used the one-time password, want 1", ok, n)
		}
	})
}

// The forced change after a sign-in with a one-time password refuses the
// one-time password itself (it would keep working forever), as the
// ordinary change refuses the current password; and the spent password
// still signs no one in while the user has not chosen.
func TestForcedChangeRefusesTheOneTimePassword(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		ctx, _ := testdb.NewTenant(t, d, "acme")
		s := users.NewStore(d, cheap)
		u, otp, err := s.CreateWithPassword(ctx, "ola@acme.example.com", "Ola", "member", "")
		if err != nil {
			t.Fatal(err)
		}
		if msg := users.CheckPassword(otp, u.Email, nil); msg != "" {
			t.Fatalf("the generated password fails the policy (%s), so this test proves nothing", msg)
		}
		if got, err := s.Authenticate(ctx, u.Email, otp); err != nil || !got.PasswordChangeRequired {
			t.Fatalf("sign-in with the one-time password = %+v, %v", got, err)
		}
		if _, err := s.Authenticate(ctx, u.Email, otp); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("the spent one-time password signs in again: %v", err)
		}
		if err := s.ChangePassword(ctx, u.ID, "", otp); fieldMsg(err, "password") == "" {
			t.Fatalf("the one-time password was chosen as the new one: %v", err)
		}
		if _, err := s.Authenticate(ctx, u.Email, otp); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("after the refusal the one-time password signs in: %v", err)
		}
		if err := s.VerifyPassword(ctx, u.ID, otp); err == nil {
			t.Fatal("the spent one-time password passes a password check")
		}
		if err := s.ChangePassword(ctx, u.ID, "", "cantaloupe in a red wheelbarrow"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(ctx, u.Email, otp); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("after choosing, the one-time password signs in: %v", err)
		}
	})
}
