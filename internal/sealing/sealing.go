// Package sealing encrypts secrets at rest: webhook signing secrets, and
// (with a key of its own, NewFor) stored responses that may carry a secret
// shown once.
//
// A signing secret must be usable for HMAC when a delivery is signed, so it
// cannot be stored as a one-way hash the way client secrets are. It is
// sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the
// service's global secret (FINSVC_SECRET), with the row's identity as
// additional data, so a database dump alone reveals no secret and a
// ciphertext copied onto another registration does not open there.
package sealing

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// version prefixes every ciphertext so that the key derivation or cipher can
// change later without ambiguity.
const version = "v1:"

// info separates this key from every other key derived from the global
// secret (per-tenant token keys, …).
const info = "finsvc webhook signing secrets v1"

// ErrDecrypt means a ciphertext did not open: wrong global secret, wrong row,
// or tampering.
var ErrDecrypt = errors.New("sealing: cannot decrypt webhook secret")

// Box seals and opens secrets. It is safe for concurrent use.
type Box struct{ aead cipher.AEAD }

// New derives the encryption key of webhook signing secrets from the global
// secret.
func New(globalSecret string) (*Box, error) { return NewFor(globalSecret, info) }

// NewFor derives a key of its own for another purpose (purpose is HKDF's
// info: "finsvc <what> v1"), so that a ciphertext of one purpose never
// opens as another's, whatever its additional data.
func NewFor(globalSecret, purpose string) (*Box, error) {
	if len(globalSecret) < 16 {
		return nil, errors.New("sealing: global secret is missing or too short")
	}
	if purpose == "" {
		return nil, errors.New("sealing: a purpose is required")
	}
	key, err := hkdf.Key(sha256.New, []byte(globalSecret), nil, purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("sealing: derive key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sealing: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("sealing: %w", err)
	}
	return &Box{aead: aead}, nil
}

// AD returns the additional data binding a ciphertext to one registration.
func AD(tenantID, webhookID int64) []byte {
	return fmt.Appendf(nil, "webhook:%d:%d", tenantID, webhookID)
}

// Seal encrypts plaintext bound to ad and returns printable text.
func (b *Box) Seal(plaintext string, ad []byte) (string, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sealing: nonce: %w", err)
	}
	out := b.aead.Seal(nonce, nonce, []byte(plaintext), ad)
	return version + base64.RawStdEncoding.EncodeToString(out), nil
}

// Open decrypts what Seal produced with the same ad.
func (b *Box) Open(ciphertext string, ad []byte) (string, error) {
	rest, ok := strings.CutPrefix(ciphertext, version)
	if !ok {
		return "", ErrDecrypt
	}
	raw, err := base64.RawStdEncoding.DecodeString(rest)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return "", ErrDecrypt
	}
	n := b.aead.NonceSize()
	pt, err := b.aead.Open(nil, raw[:n], raw[n:], ad)
	if err != nil {
		return "", ErrDecrypt
	}
	return string(pt), nil
}
