package mfa_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/mfa/passkeytest"
	"github.com/finsvc/finsvc/internal/testdb"
)

var rp = mfa.RelyingParty{ID: "acme.finsvc.example", Origin: "https://acme.finsvc.example", Name: "finsvc"}

// authenticator is a software passkey (passkeytest).
type authenticator = passkeytest.Authenticator

func newAuthenticator(t *testing.T) *authenticator { return passkeytest.New(t) }

var b64 = base64.RawURLEncoding

func (f *fixture) passkeyUser() mfa.PasskeyUser {
	return mfa.PasskeyUser{ID: f.u.ID, Email: f.u.Email, Name: f.u.Name}
}

func (f *fixture) register(t *testing.T, a *authenticator, name string) *mfa.Passkey {
	t.Helper()
	opts, err := f.s.BeginPasskeyRegistration(f.ctx, rp, f.passkeyUser())
	if err != nil {
		t.Fatal(err)
	}
	pk, err := f.s.FinishPasskeyRegistration(f.ctx, rp, f.passkeyUser(), name, a.Create(t, opts, rp.Origin, rp.ID))
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

func (f *fixture) signIn(t *testing.T, a *authenticator, origin, rpID string) (*mfa.Result, error) {
	t.Helper()
	opts, err := f.s.BeginPasskeyLogin(f.ctx, rp, f.passkeyUser())
	if err != nil {
		t.Fatal(err)
	}
	return f.s.FinishPasskeyLogin(f.ctx, rp, f.passkeyUser(), a.Get(t, opts, origin, rpID))
}

// TestPasskeys: a user registers several named passkeys, which count as a
// factor (the policy no longer sends them to enrolment); each signs in;
// rename and remove; an admin's reset removes them too.
func TestPasskeys(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		if err := f.s.SetPolicy(f.ctx, mfa.PolicyAdmins); err != nil {
			t.Fatal(err)
		}
		if req, _ := f.s.Required(f.ctx, f.u.ID, "admin"); !req {
			t.Fatal("an admin without a factor is not required to enrol")
		}
		if _, err := f.s.BeginPasskeyLogin(f.ctx, rp, f.passkeyUser()); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("passkey sign-in without passkeys: %v, want Conflict", err)
		}
		laptop, phone := newAuthenticator(t), newAuthenticator(t)
		if pk := f.register(t, laptop, "  Laptop  "); pk.N != 1 || pk.Name != "Laptop" {
			t.Fatalf("first passkey %+v", pk)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); !st.Has() || st.Passkeys != 1 || st.TOTP {
			t.Fatalf("status with a passkey %+v", st)
		}
		if req, _ := f.s.Required(f.ctx, f.u.ID, "admin"); req {
			t.Fatal("an admin with a passkey is still sent to enrolment")
		}
		f.register(t, phone, "Phone")
		list, err := f.s.Passkeys(f.ctx, f.u.ID)
		if err != nil || len(list) != 2 || list[0].Name != "Laptop" || list[1].Name != "Phone" || list[1].N != 2 {
			t.Fatalf("passkeys %+v %v", list, err)
		}

		res, err := f.signIn(t, phone, rp.Origin, rp.ID)
		if err != nil || res.Method != mfa.MethodPasskey {
			t.Fatalf("sign-in with the phone: %+v %v", res, err)
		}
		if _, err := f.signIn(t, laptop, rp.Origin, rp.ID); err != nil {
			t.Fatalf("sign-in with the laptop: %v", err)
		}
		list, _ = f.s.Passkeys(f.ctx, f.u.ID)
		if list[0].LastUsedAt == nil || list[1].LastUsedAt == nil {
			t.Fatalf("last use not kept: %+v", list)
		}

		for _, bad := range []string{"", "   ", strings.Repeat("x", mfa.MaxPasskeyName+1), "a\nb"} {
			if err := f.s.RenamePasskey(f.ctx, f.u.ID, 1, bad); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("rename to %q: %v, want Invalid", bad, err)
			}
		}
		if err := f.s.RenamePasskey(f.ctx, f.u.ID, 9, "x"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("rename of no passkey: %v, want NotFound", err)
		}
		if err := f.s.RenamePasskey(f.ctx, f.u.ID, 1, "Work laptop"); err != nil {
			t.Fatal(err)
		}
		if err := f.s.RemovePasskey(f.ctx, audit.UserActor(f.u.ID), f.u.ID, 2); err != nil {
			t.Fatal(err)
		}
		if err := f.s.RemovePasskey(f.ctx, audit.UserActor(f.u.ID), f.u.ID, 2); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("removing it again: %v, want NotFound", err)
		}
		list, _ = f.s.Passkeys(f.ctx, f.u.ID)
		if len(list) != 1 || list[0].Name != "Work laptop" {
			t.Fatalf("after rename and remove %+v", list)
		}
		// The removed passkey no longer signs in.
		if _, err := f.signIn(t, phone, rp.Origin, rp.ID); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("a removed passkey: %v, want Unauthenticated", err)
		}
		// A new passkey numbers after the highest held.
		if pk := f.register(t, newAuthenticator(t), "Key"); pk.N != 2 {
			t.Fatalf("third passkey numbered %d", pk.N)
		}

		// An admin's reset removes the passkeys and leaves the notice.
		if err := f.s.Remove(f.ctx, audit.UserActor(f.u.ID+100), f.u.ID); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); st.Has() || st.Passkeys != 0 {
			t.Fatalf("status after reset %+v", st)
		}
		if told, _ := f.s.TakeResetNotice(f.ctx, f.u.ID); !told {
			t.Fatal("a reset of passkeys only left no notice")
		}

		for action, want := range map[string]int64{audit.MFAPasskeyRegistered: 3, audit.MFAPasskeyRenamed: 1, audit.MFAPasskeyRemoved: 1} {
			var n int64
			d.Model(&audit.Row{}).Where("action = ? AND outcome = ?", action, audit.Success).Count(&n)
			if n != want {
				t.Errorf("%s: %d records, want %d", action, n, want)
			}
		}
		var used, refused int64
		d.Model(&audit.Row{}).Where("action = ? AND outcome = ?", audit.MFAPasskeyUsed, audit.Success).Count(&used)
		d.Model(&audit.Row{}).Where("action = ? AND outcome = ?", audit.MFAPasskeyUsed, audit.Failure).Count(&refused)
		if used != 2 || refused != 1 {
			t.Errorf("passkey uses audited: %d successes, %d failures; want 2, 1", used, refused)
		}
		noCredentialID(t, d, laptop, phone)
	})
}

// noCredentialID: no audit record carries a credential id, in any
// encoding.
func noCredentialID(t *testing.T, d *db.DB, as ...*authenticator) {
	t.Helper()
	var rows []audit.Row
	if err := d.Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(rows)
	for _, a := range as {
		for _, enc := range []string{b64.EncodeToString(a.ID), base64.StdEncoding.EncodeToString(a.ID), strings.ToLower(strings.TrimSpace(hexOf(a.ID)))} {
			if strings.Contains(string(all), enc) {
				t.Fatalf("an audit record holds a credential id (%s)", enc)
			}
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestPasskeyRefusals: answers for another origin or RP id, a replayed
// answer, a ceremony finished twice or too late, a cloned key whose count
// went back, and another user's key are refused, and nothing is kept.
func TestPasskeyRefusals(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		a := newAuthenticator(t)

		// Registration: wrong origin, then a spent ceremony.
		opts, err := f.s.BeginPasskeyRegistration(f.ctx, rp, f.passkeyUser())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.FinishPasskeyRegistration(f.ctx, rp, f.passkeyUser(), "", a.Create(t, opts, rp.Origin, rp.ID)); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("no name: %v, want Invalid", err)
		}
		if _, err := f.s.FinishPasskeyRegistration(f.ctx, rp, f.passkeyUser(), "K", a.Create(t, opts, "https://evil.example", rp.ID)); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("another origin: %v, want Unauthenticated", err)
		}
		if _, err := f.s.FinishPasskeyRegistration(f.ctx, rp, f.passkeyUser(), "K", a.Create(t, opts, rp.Origin, rp.ID)); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("a ceremony finished twice: %v, want Invalid", err)
		}
		opts, _ = f.s.BeginPasskeyRegistration(f.ctx, rp, f.passkeyUser())
		if _, err := f.s.FinishPasskeyRegistration(f.ctx, rp, f.passkeyUser(), "K", a.Create(t, opts, rp.Origin, "other.example")); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("another RP id: %v, want Unauthenticated", err)
		}
		opts, _ = f.s.BeginPasskeyRegistration(f.ctx, rp, f.passkeyUser())
		f.clk.Add(mfa.CeremonyTTL + time.Second)
		if _, err := f.s.FinishPasskeyRegistration(f.ctx, rp, f.passkeyUser(), "K", a.Create(t, opts, rp.Origin, rp.ID)); !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("an expired ceremony: %v, want Invalid", err)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); st.Has() {
			t.Fatal("a refused registration left a passkey")
		}
		f.register(t, a, "Key")

		// Sign-in: a replayed answer, another origin, an expired
		// ceremony, a clone behind in count, a key of another user.
		opts, _ = f.s.BeginPasskeyLogin(f.ctx, rp, f.passkeyUser())
		answer := a.Get(t, opts, rp.Origin, rp.ID)
		if _, err := f.s.FinishPasskeyLogin(f.ctx, rp, f.passkeyUser(), answer); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.FinishPasskeyLogin(f.ctx, rp, f.passkeyUser(), answer); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("a replayed answer: %v, want Unauthenticated", err)
		}
		if _, err := f.signIn(t, a, "https://evil.example", rp.ID); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("another origin: %v, want Unauthenticated", err)
		}
		opts, _ = f.s.BeginPasskeyLogin(f.ctx, rp, f.passkeyUser())
		f.clk.Add(mfa.CeremonyTTL + time.Second)
		if _, err := f.s.FinishPasskeyLogin(f.ctx, rp, f.passkeyUser(), a.Get(t, opts, rp.Origin, rp.ID)); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("an expired ceremony: %v, want Unauthenticated", err)
		}
		a.Count = 0 // a clone that has not seen the uses since
		if _, err := f.signIn(t, a, rp.Origin, rp.ID); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("a clone behind in count: %v, want Unauthenticated", err)
		}
		a.Count = 100
		if _, err := f.signIn(t, a, rp.Origin, rp.ID); err != nil {
			t.Fatalf("the key itself after the clone was refused: %v", err)
		}

		other, err := f.users.Create(f.ctx, "bob@acme.example.com", "Bob", "member", "another long password for bob")
		if err != nil {
			t.Fatal(err)
		}
		bob := mfa.PasskeyUser{ID: other.ID, Email: other.Email}
		bk := newAuthenticator(t)
		bopts, _ := f.s.BeginPasskeyRegistration(f.ctx, rp, bob)
		if _, err := f.s.FinishPasskeyRegistration(f.ctx, rp, bob, "Bob's", bk.Create(t, bopts, rp.Origin, rp.ID)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.signIn(t, bk, rp.Origin, rp.ID); !apperr.Is(err, apperr.Unauthenticated) {
			t.Fatalf("another user's passkey: %v, want Unauthenticated", err)
		}
		// Bob registering Ada's authenticator again is refused: one
		// credential id belongs to one account.
		bopts, _ = f.s.BeginPasskeyRegistration(f.ctx, rp, bob)
		if _, err := f.s.FinishPasskeyRegistration(f.ctx, rp, bob, "dup", a.Create(t, bopts, rp.Origin, rp.ID)); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("a credential registered twice: %v, want Conflict", err)
		}
		noCredentialID(t, d, a, bk)
	})
}

// TestPasskeyAnswerOnceRacing: one passkey answer sent eight times at
// once signs in once (the ceremony is taken by one finish).
func TestPasskeyAnswerOnceRacing(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		a := newAuthenticator(t)
		f.register(t, a, "Key")
		opts, err := f.s.BeginPasskeyLogin(f.ctx, rp, f.passkeyUser())
		if err != nil {
			t.Fatal(err)
		}
		answer := a.Get(t, opts, rp.Origin, rp.ID)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.s.FinishPasskeyLogin(f.ctx, rp, f.passkeyUser(), answer)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case apperr.Is(err, apperr.Unauthenticated):
					refused++
				default:
					t.Errorf("finish: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok != 1 || refused != 7 {
			t.Fatalf("8 concurrent finishes of one answer: %d accepted, %d refused; want 1 and 7", ok, refused)
		}
	})
}

func TestTenantRelyingParty(t *testing.T) {
	for _, c := range []struct {
		scheme, port, id, origin string
	}{
		{"https", "", "acme.finsvc.example", "https://acme.finsvc.example"},
		{"https", "443", "acme.finsvc.example", "https://acme.finsvc.example"},
		{"https", "8443", "acme.finsvc.example", "https://acme.finsvc.example:8443"},
		{"http", "80", "acme.finsvc.example", "http://acme.finsvc.example"},
		{"http", "8080", "acme.finsvc.example", "http://acme.finsvc.example:8080"},
	} {
		got := mfa.TenantRelyingParty("acme", "Finsvc.example.", c.scheme, c.port)
		if got.ID != c.id || got.Origin != c.origin {
			t.Errorf("%s port %q: %+v, want id %s origin %s", c.scheme, c.port, got, c.id, c.origin)
		}
	}
}

// TestRemoveTOTPKeepsPasskeys: a user's own removal of the authenticator
// app takes its recovery codes and leaves their passkeys (still a
// factor); an admin's reset takes both.
func TestRemoveTOTPKeepsPasskeys(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d)
		f.enrol(t)
		f.register(t, newAuthenticator(t), "Key")
		if err := f.s.RemoveTOTP(f.ctx, audit.UserActor(f.u.ID), f.u.ID); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); st.TOTP || st.RecoveryRemaining != 0 || st.Passkeys != 1 || !st.Has() {
			t.Fatalf("after removing the app: %+v", st)
		}
		if err := f.s.Remove(f.ctx, audit.UserActor(f.u.ID+100), f.u.ID); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.s.Status(f.ctx, f.u.ID); st.Has() {
			t.Fatalf("after the reset: %+v", st)
		}
	})
}
