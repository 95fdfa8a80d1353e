package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/clientaddr"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
)

// Cookie names. Cookies are host-only (no Domain attribute), so the
// browser never sends tenant A's cookies to tenant B's host; the session
// row is tenant-scoped as well.
const (
	sessionCookie = "finsvc_session"
	csrfCookie    = "finsvc_csrf"
)

// webSession is a row of web_sessions.
type webSession struct {
	TenantID  int64
	IDHash    string
	UserID    int64
	ExpiresAt time.Time
	CreatedAt time.Time
	// Stage is how far the sign-in went: "" signed in, stageFactor
	// waiting for the second factor, stageEnrol made to enrol one first
	// (factor.go). Only a session at "" is a signed-in user.
	Stage string
	// AMR are the factors the sign-in used, space-separated ("pwd otp").
	AMR string `gorm:"column:amr"`
	// FactorAt is when the last second factor was given (step-up).
	FactorAt *time.Time
}

func (webSession) TableName() string { return "web_sessions" }

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// secure reports whether cookies must carry Secure: the request came over
// TLS, directly or through a trusted proxy.
func (s *Service) secure(r *http.Request) bool {
	return r.TLS != nil || s.cfg.TrustProxy && r.Header.Get("X-Forwarded-Proto") == "https"
}

func (s *Service) setCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c.Request()),
	})
}

// startSession logs the user in (stage "") or half in (stageFactor,
// stageEnrol) with the factors amr: a fresh session id (never one the
// client chose, against fixation), stored as its SHA-256. The session the
// browser had, if any, ends: each step of a sign-in rotates the id.
func (s *Service) startSession(c echo.Context, userID int64, stage, amr string, factorAt *time.Time) error {
	if err := s.endSession(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	id := randomToken()
	ttl := SessionTTL
	if stage != "" {
		ttl = HalfSessionTTL
	}
	row := webSession{TenantID: tenant.ID(ctx), IDHash: sha256Hex(id), UserID: userID,
		ExpiresAt: s.now().UTC().Add(ttl), CreatedAt: s.now().UTC(), Stage: stage, AMR: amr, FactorAt: factorAt}
	if err := s.db.DB.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("oauth: create session: %w", err)
	}
	s.setCookie(c, sessionCookie, id, int(ttl/time.Second))
	// Later reads in this request see the new session.
	kept := c.Request().Cookies()
	c.Request().Header.Del("Cookie")
	for _, ck := range kept {
		if ck.Name != sessionCookie {
			c.Request().AddCookie(ck)
		}
	}
	c.Request().AddCookie(&http.Cookie{Name: sessionCookie, Value: id})
	return nil
}

// session returns the browser's live session of this tenant at any stage,
// with its user, or nil.
func (s *Service) session(c echo.Context) (*webSession, *users.User, error) {
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || len(ck.Value) > 128 {
		return nil, nil, nil
	}
	ctx := c.Request().Context()
	var row webSession
	err = tenant.Scope(ctx, s.db.DB).Where("id_hash = ?", sha256Hex(ck.Value)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("oauth: load session: %w", err)
	}
	if !row.ExpiresAt.After(s.now()) {
		return nil, nil, nil
	}
	u, err := s.users.Get(ctx, row.UserID)
	if apperr.Is(err, apperr.NotFound) {
		return nil, nil, nil // the user was deleted
	}
	if err != nil {
		return nil, nil, fmt.Errorf("oauth: load session user: %w", err)
	}
	return &row, u, nil
}

// currentUser returns the signed-in user of this tenant, or nil (also for
// a sign-in still waiting for its second factor or an enrolment).
func (s *Service) currentUser(c echo.Context) (*users.User, error) {
	row, u, err := s.session(c)
	if row == nil || err != nil || row.Stage != "" {
		return nil, err
	}
	return u, nil
}

// endSession deletes the session row and the cookie.
func (s *Service) endSession(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
		ctx := c.Request().Context()
		if err := tenant.Scope(ctx, s.db.DB).Where("id_hash = ?", sha256Hex(ck.Value)).Delete(&webSession{}).Error; err != nil {
			return fmt.Errorf("oauth: delete session: %w", err)
		}
	}
	s.setCookie(c, sessionCookie, "", -1)
	return nil
}

// csrfSeed returns the browser's CSRF cookie, setting one if absent.
func (s *Service) csrfSeed(c echo.Context) string {
	if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 && len(ck.Value) <= 128 {
		return ck.Value
	}
	v := randomToken()
	s.setCookie(c, csrfCookie, v, 0)
	// Make the new value visible to token computation later in this request.
	c.Request().AddCookie(&http.Cookie{Name: csrfCookie, Value: v})
	return v
}

// csrfToken is the form token for purpose (and the bound data, for the
// consent form: the authorization parameters, so a posted form cannot swap
// the state, redirect or scopes): HMAC(tenant CSRF key, purpose, seed,
// bound). Double-submit: an attacker can neither read the HttpOnly seed
// nor compute the MAC.
func (s *Service) csrfToken(ctx context.Context, seed, purpose, bound string) string {
	return csrfMAC(deriveKey(s.ring.Current().Secret(), purposeCSRF, tenant.ID(ctx)), seed, purpose, bound)
}

func csrfMAC(key []byte, seed, purpose, bound string) string {
	m := hmac.New(sha256.New, key)
	for _, p := range []string{purpose, seed, bound} {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF verifies the posted csrf_token.
func (s *Service) checkCSRF(c echo.Context, purpose, bound string) bool {
	ck, err := c.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	got := c.Request().PostFormValue("csrf_token")
	if got == "" {
		return false
	}
	// A form rendered under a previous, unrevoked secret (by a replica not
	// yet restarted with the new ring) is still accepted.
	for _, key := range verifierKeys(s.ring, purposeCSRF, tenant.ID(c.Request().Context())) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(csrfMAC(key, ck.Value, purpose, bound))) == 1 {
			return true
		}
	}
	return false
}

// The console pages (internal/console) use the same session and CSRF machinery as
// the sign-in pages, through these.

// CurrentUser returns the signed-in user of this tenant, or nil.
func (s *Service) CurrentUser(c echo.Context) (*users.User, error) { return s.currentUser(c) }

// FormToken is the CSRF token of a form for purpose (setting the browser's
// CSRF cookie when it has none).
func (s *Service) FormToken(c echo.Context, purpose string) string {
	return s.csrfToken(c.Request().Context(), s.csrfSeed(c), purpose, "")
}

// CheckForm verifies the posted csrf_token of a form for purpose.
func (s *Service) CheckForm(c echo.Context, purpose string) bool { return s.checkCSRF(c, purpose, "") }

// LogoutToken is the CSRF token of the layout's sign-out form.
func (s *Service) LogoutToken(c echo.Context) string { return s.FormToken(c, "logout") }

// ConfirmPassword checks that password is u's own (users.VerifyPassword),
// for a signed-in user confirming something sensitive (the console's
// reveal of a webhook secret). It is throttled with the sign-in's
// counters, per email and per client address, so guessing here spends the
// same budget as guessing at /login: over it, apperr.TooManyRequests (and
// Retry-After on the response) without checking the password. A wrong
// password is users.VerifyPassword's apperr.Unauthenticated.
//
// A user with a second factor must also have given it within
// StepUpWindow (RequireStepUp sends them to give it): otherwise
// apperr.Unauthenticated before the password is looked at.
func (s *Service) ConfirmPassword(c echo.Context, u *users.User, password string) error {
	ctx := c.Request().Context()
	if fresh, err := s.freshFactor(c, u); err != nil {
		return err
	} else if !fresh {
		return apperr.E(apperr.Unauthenticated, "second factor not given recently").
			WithField("password", "give your second factor again first (reload this page)")
	}
	done, wait, ok := s.logins.begin(tenant.ID(ctx), u.Email, clientaddr.From(c.Request(), s.cfg.TrustProxy))
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		return apperr.E(apperr.TooManyRequests, "Too many attempts. Try again later.")
	}
	failed, succeeded := false, false
	// The slot is given back even if the check panics.
	defer func() { done(failed, succeeded) }()
	err := s.users.VerifyPassword(ctx, u.ID, password)
	failed, succeeded = apperr.Is(err, apperr.Unauthenticated), err == nil
	return err
}
