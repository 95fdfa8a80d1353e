package oauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
)

// flashCookie carries a value from a POST to the page it redirects to
// (POST-redirect-GET): a new secret is shown once on the GET, and reloading
// that page neither posts the form again nor shows the secret again.
//
// The cookie opens once: it names a nonce recorded server-side when it is
// set (flash_nonces), and taking it deletes that record, so a copy of the
// cookie replayed later finds none. It is also bound to the session that
// set it, so another session of the same user cannot take it either.
const flashCookie = "finsvc_flash"

// flashTTL bounds how long a flash waits for its redirect.
const flashTTL = 2 * time.Minute

type flashBody struct {
	User    int64           `json:"u"`
	Path    string          `json:"p"`
	Expires int64           `json:"e"`
	Nonce   string          `json:"n"` // its flash_nonces row: deleted when taken
	Session string          `json:"s"` // the SHA-256 of the session cookie that set it
	Value   json.RawMessage `json:"v"`
}

// flashNonce is a row of flash_nonces: a flash set and not yet taken.
type flashNonce struct {
	TenantID  int64     `gorm:"column:tenant_id;primaryKey"`
	Nonce     string    `gorm:"column:nonce;primaryKey"`
	UserID    int64     `gorm:"column:user_id"`
	ExpiresAt time.Time `gorm:"column:expires_at"`
}

func (flashNonce) TableName() string { return "flash_nonces" }

// flashSession is what binds a flash to the browser session of c ("" for
// a request without one).
func flashSession(c echo.Context) string {
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	return sha256Hex(ck.Value)
}

func (s *Service) flashAEAD(c echo.Context) (cipher.AEAD, error) {
	return flashAEADOf(deriveKey(s.ring.Current().Secret(), purposeFlash, tenant.ID(c.Request().Context())))
}

func flashAEADOf(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// openFlash opens a sealed flash under the current secret's key or an
// unrevoked previous one's (a flash set by a replica not yet restarted
// with the new ring).
func (s *Service) openFlash(c echo.Context, sealed []byte) ([]byte, bool) {
	for _, key := range verifierKeys(s.ring, purposeFlash, tenant.ID(c.Request().Context())) {
		aead, err := flashAEADOf(key)
		if err != nil || len(sealed) < aead.NonceSize() {
			return nil, false
		}
		if plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(flashCookie)); err == nil {
			return plain, true
		}
	}
	return nil, false
}

// SetFlash seals v (AES-GCM under a per-tenant key; the browser cannot
// read it) into a short-lived cookie for userID's next GET of path.
func (s *Service) SetFlash(c echo.Context, userID int64, path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("oauth: flash: %w", err)
	}
	nb := make([]byte, 16)
	if _, err := rand.Read(nb); err != nil {
		return fmt.Errorf("oauth: flash: %w", err)
	}
	expires := s.now().Add(flashTTL)
	n := flashNonce{TenantID: tenant.ID(c.Request().Context()), Nonce: hex.EncodeToString(nb), UserID: userID, ExpiresAt: db.Clock(s.now).Now().Add(flashTTL)}
	if err := s.db.DB.WithContext(c.Request().Context()).Create(&n).Error; err != nil {
		return fmt.Errorf("oauth: flash: record its nonce: %w", err)
	}
	plain, err := json.Marshal(flashBody{User: userID, Path: path, Expires: expires.Unix(), Nonce: n.Nonce, Session: flashSession(c), Value: raw})
	if err != nil {
		return fmt.Errorf("oauth: flash: %w", err)
	}
	aead, err := s.flashAEAD(c)
	if err != nil {
		return fmt.Errorf("oauth: flash: %w", err)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("oauth: flash: %w", err)
	}
	sealed := aead.Seal(nonce, nonce, plain, []byte(flashCookie))
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: path,
		MaxAge: int(flashTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(c.Request())})
	return nil
}

// TakeFlash opens the flash that userID's POST left for path into v and
// deletes the cookie; false when there is none (or it is not theirs, not
// for this page, not of this session, expired, altered or already taken).
// Taking it deletes its nonce's row: of two requests with the same cookie,
// one gets the value.
func (s *Service) TakeFlash(c echo.Context, userID int64, path string, v any) bool {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: path, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(c.Request())})
	sealed, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(sealed) > 8192 {
		return false
	}
	plain, ok := s.openFlash(c, sealed)
	if !ok {
		return false
	}
	var b flashBody
	if json.Unmarshal(plain, &b) != nil || b.User != userID || b.Path != path || s.now().Unix() > b.Expires ||
		b.Nonce == "" || b.Session != flashSession(c) {
		return false
	}
	ctx := c.Request().Context()
	res := tenant.Scope(ctx, s.db.DB.WithContext(ctx)).Where("nonce = ? AND user_id = ?", b.Nonce, userID).Delete(&flashNonce{})
	if res.Error != nil || res.RowsAffected != 1 {
		return false
	}
	return json.Unmarshal(b.Value, v) == nil
}
