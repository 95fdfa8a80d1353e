package mfa

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
)

// MethodPasskey names a passkey in a session's amr (RFC 8176's hwk: a
// proof of possession of a hardware-secured key).
const MethodPasskey = "hwk"

// CeremonyTTL is how long a passkey ceremony (registration or sign-in)
// may take between its begin and its finish.
const CeremonyTTL = 5 * time.Minute

// MaxPasskeyName is the longest name a passkey may be given (characters).
const MaxPasskeyName = 64

// RelyingParty is who passkeys are registered with and asserted to: the
// tenant's host. ID is the host name without port (the RP id); Origin is
// the scheme, host and port the browser shows (https://acme.example.com).
// A passkey registered with one RP id is usable only with that id.
type RelyingParty struct {
	ID     string
	Origin string
	Name   string // shown by the authenticator
}

func (rp RelyingParty) webauthn() (*webauthn.WebAuthn, error) {
	name := rp.Name
	if name == "" {
		name = rp.ID
	}
	w, err := webauthn.New(&webauthn.Config{
		RPID: rp.ID, RPDisplayName: name, RPOrigins: []string{rp.Origin},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mfa: relying party %q: %w", rp.ID, err)
	}
	return w, nil
}

type passkeyRow struct {
	TenantID     int64 `gorm:"primaryKey;autoIncrement:false"`
	UserID       int64 `gorm:"primaryKey;autoIncrement:false"`
	N            int   `gorm:"primaryKey;autoIncrement:false"`
	CredentialID string
	Name         string
	Credential   string
	CreatedAt    time.Time
	LastUsedAt   *time.Time
}

func (passkeyRow) TableName() string { return "mfa_passkeys" }

type challengeRow struct {
	TenantID  int64  `gorm:"primaryKey;autoIncrement:false"`
	UserID    int64  `gorm:"primaryKey;autoIncrement:false"`
	Purpose   string `gorm:"primaryKey"`
	Session   string
	ExpiresAt time.Time
}

func (challengeRow) TableName() string { return "mfa_passkey_challenges" }

const (
	purposeRegister = "register"
	purposeLogin    = "login"
)

// Passkey is one of a user's passkeys as the console lists it (no
// credential id: it is of no use to a person and kept out of pages).
type Passkey struct {
	N          int
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// PasskeyUser is the account a passkey belongs to, as the authenticator
// shows it.
type PasskeyUser struct {
	ID    int64
	Email string
	Name  string
}

// waUser is a user as the WebAuthn library sees them. The user handle is
// the tenant and user ids (not secret; it only has to be stable and
// unique in the RP).
type waUser struct {
	tenantID int64
	u        PasskeyUser
	creds    []webauthn.Credential
}

func (w *waUser) WebAuthnID() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(w.tenantID))
	return binary.BigEndian.AppendUint64(b, uint64(w.u.ID))
}
func (w *waUser) WebAuthnName() string { return w.u.Email }
func (w *waUser) WebAuthnDisplayName() string {
	if w.u.Name != "" {
		return w.u.Name
	}
	return w.u.Email
}
func (w *waUser) WebAuthnCredentials() []webauthn.Credential { return w.creds }

func (s *Store) passkeyRows(ctx context.Context, q *gorm.DB, userID int64) ([]passkeyRow, []webauthn.Credential, error) {
	var rows []passkeyRow
	if err := tenant.Scope(ctx, q).Where("user_id = ?", userID).Order("n").Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("mfa: passkeys: %w", err)
	}
	creds := make([]webauthn.Credential, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal([]byte(r.Credential), &creds[i]); err != nil {
			return nil, nil, fmt.Errorf("mfa: passkey %d of user %d: %w", r.N, userID, err)
		}
	}
	return rows, creds, nil
}

// Passkeys lists userID's passkeys, oldest first.
func (s *Store) Passkeys(ctx context.Context, userID int64) ([]Passkey, error) {
	rows, _, err := s.passkeyRows(ctx, s.db.DB, userID)
	if err != nil {
		return nil, err
	}
	out := make([]Passkey, len(rows))
	for i, r := range rows {
		out[i] = Passkey{N: r.N, Name: r.Name, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt}
	}
	return out, nil
}

// putChallenge keeps a ceremony's session data until its finish, replacing
// one of the same purpose the user had under way.
func (s *Store) putChallenge(ctx context.Context, userID int64, purpose string, sd *webauthn.SessionData) error {
	b, err := json.Marshal(sd)
	if err != nil {
		return err
	}
	row := challengeRow{TenantID: tenant.ID(ctx), UserID: userID, Purpose: purpose, Session: string(b), ExpiresAt: s.now.Now().Add(CeremonyTTL)}
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		if err := tenant.Scope(ctx, tx).Where("user_id = ? AND purpose = ?", userID, purpose).Delete(&challengeRow{}).Error; err != nil {
			return err
		}
		return tx.Create(&row).Error
	})
}

// takeChallenge removes and returns the ceremony under way (nil: none, or
// expired). It commits on its own, before the answer is checked: a
// ceremony is finished once, whatever its outcome, so that an answer
// refused is not tried again against the same challenge, and two
// finishes racing get it once between them.
func (s *Store) takeChallenge(ctx context.Context, userID int64, purpose string) (*webauthn.SessionData, error) {
	var rows []challengeRow
	err := s.db.Tx(ctx, func(tx *gorm.DB) error {
		rows = nil
		if err := tenant.Scope(ctx, s.db.ForUpdate(tx)).Where("user_id = ? AND purpose = ?", userID, purpose).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tenant.Scope(ctx, tx).Where("user_id = ? AND purpose = ?", userID, purpose).Delete(&challengeRow{}).Error
	})
	if err != nil || len(rows) == 0 || !s.now.Now().Before(rows[0].ExpiresAt) {
		return nil, err
	}
	var sd webauthn.SessionData
	if err := json.Unmarshal([]byte(rows[0].Session), &sd); err != nil {
		return nil, fmt.Errorf("mfa: stored ceremony: %w", err)
	}
	return &sd, nil
}

func noCeremony() error {
	return apperr.E(apperr.Invalid, "the passkey request expired or was already used; try again")
}

func passkeyRefused() error {
	return apperr.E(apperr.Unauthenticated, "the passkey was not accepted")
}

// BeginPasskeyRegistration starts registering a new passkey for u: the
// returned JSON is the options for navigator.credentials.create (the
// publicKey member at the top). The user's existing passkeys are
// excluded, so one authenticator is registered once.
func (s *Store) BeginPasskeyRegistration(ctx context.Context, rp RelyingParty, u PasskeyUser) ([]byte, error) {
	w, err := rp.webauthn()
	if err != nil {
		return nil, err
	}
	_, creds, err := s.passkeyRows(ctx, s.db.DB, u.ID)
	if err != nil {
		return nil, err
	}
	wu := &waUser{tenantID: tenant.ID(ctx), u: u, creds: creds}
	exclude := make([]protocol.CredentialDescriptor, len(creds))
	for i := range creds {
		exclude[i] = creds[i].Descriptor()
	}
	creation, sd, err := w.BeginRegistration(wu,
		webauthn.WithExclusions(exclude),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementPreferred),
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementPreferred, UserVerification: protocol.VerificationPreferred,
		}))
	if err != nil {
		return nil, fmt.Errorf("mfa: begin passkey registration: %w", err)
	}
	if err := s.putChallenge(ctx, u.ID, purposeRegister, sd); err != nil {
		return nil, err
	}
	return json.Marshal(creation)
}

// FinishPasskeyRegistration checks the browser's answer (the JSON of the
// PublicKeyCredential navigator.credentials.create returned) against the
// ceremony begun, and keeps the passkey under name. A bad answer is
// apperr.Unauthenticated (audited); an expired or spent ceremony
// apperr.Invalid; a bad name apperr.Invalid.
func (s *Store) FinishPasskeyRegistration(ctx context.Context, rp RelyingParty, u PasskeyUser, name string, response []byte) (*Passkey, error) {
	name, err := passkeyName(name)
	if err != nil {
		return nil, err
	}
	w, err := rp.webauthn()
	if err != nil {
		return nil, err
	}
	sd, err := s.takeChallenge(ctx, u.ID, purposeRegister)
	if err != nil {
		return nil, err
	}
	if sd == nil {
		return nil, noCeremony()
	}
	var out *Passkey
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
		if err != nil {
			return passkeyRefused()
		}
		rows, creds, err := s.passkeyRows(ctx, s.db.ForUpdate(tx), u.ID)
		if err != nil {
			return err
		}
		cred, err := w.CreateCredential(&waUser{tenantID: tenant.ID(ctx), u: u, creds: creds}, *sd, parsed)
		if err != nil {
			return passkeyRefused()
		}
		b, err := json.Marshal(cred)
		if err != nil {
			return err
		}
		n := 1
		for _, r := range rows {
			n = max(n, r.N+1)
		}
		row := passkeyRow{TenantID: tenant.ID(ctx), UserID: u.ID, N: n, Name: name,
			CredentialID: base64.RawURLEncoding.EncodeToString(cred.ID), Credential: string(b), CreatedAt: s.now.Now()}
		if err := tx.Create(&row).Error; err != nil {
			if db.IsUniqueViolation(err) {
				return apperr.E(apperr.Conflict, "this passkey is already registered")
			}
			return err
		}
		if err := tenant.Scope(ctx, tx).Where("user_id = ?", u.ID).Delete(&noticeRow{}).Error; err != nil {
			return err
		}
		out = &Passkey{N: n, Name: name, CreatedAt: row.CreatedAt}
		return audit.Record(ctx, tx, entry(audit.MFAPasskeyRegistered, u.ID, audit.Success))
	})
	if apperr.Is(err, apperr.Unauthenticated) {
		if rerr := audit.RecordAlone(ctx, s.db, entry(audit.MFAPasskeyRegistered, u.ID, audit.Failure)); rerr != nil {
			return nil, rerr
		}
	}
	return out, err
}

// passkeyName is name trimmed, when it is one a passkey can have.
func passkeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", apperr.E(apperr.Invalid, "name the passkey").WithField("name", "is required")
	case utf8.RuneCountInString(name) > MaxPasskeyName:
		return "", apperr.E(apperr.Invalid, "the name is too long").WithField("name", fmt.Sprintf("must be at most %d characters", MaxPasskeyName))
	case strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "", apperr.E(apperr.Invalid, "the name has control characters").WithField("name", "must be printable")
	}
	return name, nil
}

// RenamePasskey names userID's passkey n anew (audited).
func (s *Store) RenamePasskey(ctx context.Context, userID int64, n int, name string) error {
	name, err := passkeyName(name)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Model(&passkeyRow{}).Where("user_id = ? AND n = ?", userID, n).Update("name", name)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return apperr.E(apperr.NotFound, "no such passkey")
		}
		return audit.Record(ctx, tx, entry(audit.MFAPasskeyRenamed, userID, audit.Success))
	})
}

// RemovePasskey deletes userID's passkey n (audited; actor as for
// Remove). Recovery codes stay while the user has an authenticator app.
func (s *Store) RemovePasskey(ctx context.Context, actor *audit.Actor, userID int64, n int) error {
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		res := tenant.Scope(ctx, tx).Where("user_id = ? AND n = ?", userID, n).Delete(&passkeyRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return apperr.E(apperr.NotFound, "no such passkey")
		}
		e := entry(audit.MFAPasskeyRemoved, userID, audit.Success)
		e.Actor = actor
		return audit.Record(ctx, tx, e)
	})
}

// BeginPasskeyLogin starts userID's passkey sign-in (after their password,
// or a step-up): the returned JSON is the options for
// navigator.credentials.get. A user without passkeys is apperr.Conflict.
func (s *Store) BeginPasskeyLogin(ctx context.Context, rp RelyingParty, u PasskeyUser) ([]byte, error) {
	w, err := rp.webauthn()
	if err != nil {
		return nil, err
	}
	_, creds, err := s.passkeyRows(ctx, s.db.DB, u.ID)
	if err != nil {
		return nil, err
	}
	if len(creds) == 0 {
		return nil, apperr.E(apperr.Conflict, "no passkey is registered")
	}
	assertion, sd, err := w.BeginLogin(&waUser{tenantID: tenant.ID(ctx), u: u, creds: creds},
		webauthn.WithUserVerification(protocol.VerificationPreferred))
	if err != nil {
		return nil, fmt.Errorf("mfa: begin passkey sign-in: %w", err)
	}
	if err := s.putChallenge(ctx, u.ID, purposeLogin, sd); err != nil {
		return nil, err
	}
	return json.Marshal(assertion)
}

// FinishPasskeyLogin checks the browser's answer (the JSON of the
// PublicKeyCredential navigator.credentials.get returned): on success the
// passkey's sign count and last use are kept and the result's Method is
// MethodPasskey. A wrong answer (another user's key, a cloned key whose
// count went back, a bad signature) is apperr.Unauthenticated; an expired
// or spent ceremony too. Each outcome is audited as mfa.verified.
func (s *Store) FinishPasskeyLogin(ctx context.Context, rp RelyingParty, u PasskeyUser, response []byte) (*Result, error) {
	w, err := rp.webauthn()
	if err != nil {
		return nil, err
	}
	sd, err := s.takeChallenge(ctx, u.ID, purposeLogin)
	if err != nil {
		return nil, err
	}
	var res *Result
	err = s.db.Tx(ctx, func(tx *gorm.DB) error {
		if sd == nil {
			return passkeyRefused()
		}
		parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
		if err != nil {
			return passkeyRefused()
		}
		rows, creds, err := s.passkeyRows(ctx, s.db.ForUpdate(tx), u.ID)
		if err != nil {
			return err
		}
		cred, err := w.ValidateLogin(&waUser{tenantID: tenant.ID(ctx), u: u, creds: creds}, *sd, parsed)
		if err != nil || cred.Authenticator.CloneWarning {
			return passkeyRefused()
		}
		id := base64.RawURLEncoding.EncodeToString(cred.ID)
		var n int
		for _, r := range rows {
			if r.CredentialID == id {
				n = r.N
			}
		}
		if n == 0 {
			return passkeyRefused()
		}
		b, err := json.Marshal(cred)
		if err != nil {
			return err
		}
		if err := tenant.Scope(ctx, tx).Model(&passkeyRow{}).Where("user_id = ? AND n = ?", u.ID, n).
			Updates(map[string]any{"credential": string(b), "last_used_at": s.now.Now()}).Error; err != nil {
			return err
		}
		res = &Result{Method: MethodPasskey}
		return audit.Record(ctx, tx, entry(audit.MFAPasskeyUsed, u.ID, audit.Success))
	})
	if apperr.Is(err, apperr.Unauthenticated) {
		if rerr := audit.RecordAlone(ctx, s.db, entry(audit.MFAPasskeyUsed, u.ID, audit.Failure)); rerr != nil {
			return nil, rerr
		}
	}
	return res, err
}

// TenantRelyingParty is the relying party of the tenant served at
// <slug>.<baseDomain>: the RP id is that host name, the origin it with the
// scheme ("https" or "http") and port ("" or the scheme's default: none)
// the browser used. A deployment whose browsers see another host name
// sets the base domain to the one they see (README, "Second factor"):
// a passkey is bound to the RP id it was registered under.
func TenantRelyingParty(slug, baseDomain, scheme, port string) RelyingParty {
	host := strings.ToLower(slug + "." + strings.Trim(baseDomain, "."))
	origin := scheme + "://" + host
	if port != "" && !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		origin += ":" + port
	}
	return RelyingParty{ID: host, Origin: origin, Name: "finsvc · " + slug}
}
