// Package sealing encrypts secrets at rest under the service's key ring
// (internal/keyring): webhook signing secrets, and (with a key of their
// own, NewFor) stored responses that may carry a secret shown once.
//
// A signing secret must be usable for HMAC when a delivery is signed, so it
// cannot be stored as a one-way hash the way client secrets are. It is
// sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the ring's
// current secret, with the row's identity as additional data, so a
// database dump alone reveals no secret and a ciphertext copied onto
// another registration does not open there.
//
// Every sealed value names the key that sealed it ("v2:<key id>:…"), so
// opening picks that key and never guesses, and `finsvc secret reseal`
// finds the values still under a previous key. Values sealed before the
// ring existed ("v1:…", no id) were sealed under the one secret of that
// time; they open under whichever key of the ring authenticates them (the
// GCM tag refuses every other key) until a reseal rewrites them with an id.
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

	"github.com/finsvc/finsvc/internal/keyring"
)

// Prefixes of sealed values: legacy (no key id) and keyed.
const (
	legacy = "v1:"
	keyed  = "v2:"
)

// info separates this key from every other key derived from the global
// secret (per-tenant token keys, …).
const info = "finsvc webhook signing secrets v1"

// ErrDecrypt means a ciphertext did not open: wrong key, wrong row, or
// tampering.
var ErrDecrypt = errors.New("sealing: cannot decrypt sealed value")

// ErrUnknownKey means a value is sealed under a key id that is not in the
// ring (removed before `finsvc secret reseal` finished). It wraps
// ErrDecrypt.
var ErrUnknownKey = fmt.Errorf("%w: sealed under a key that is not in the ring", ErrDecrypt)

// Box seals and opens secrets. It is safe for concurrent use.
type Box struct {
	current string
	aeads   map[string]cipher.AEAD // by key id
	order   []cipher.AEAD          // ring order, for legacy values
}

// New derives the encryption keys of webhook signing secrets from ring.
func New(ring *keyring.Ring) (*Box, error) { return NewFor(ring, info) }

// NewFor derives keys of their own for another purpose (purpose is HKDF's
// info: "finsvc <what> v1"), so that a ciphertext of one purpose never
// opens as another's, whatever its additional data.
func NewFor(ring *keyring.Ring, purpose string) (*Box, error) {
	if ring == nil {
		return nil, errors.New("sealing: the key ring is missing")
	}
	if purpose == "" {
		return nil, errors.New("sealing: a purpose is required")
	}
	b := &Box{current: ring.Current().ID, aeads: map[string]cipher.AEAD{}}
	for _, k := range ring.Keys() {
		key, err := hkdf.Key(sha256.New, k.Secret(), nil, purpose, 32)
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
		b.aeads[k.ID] = aead
		b.order = append(b.order, aead)
	}
	return b, nil
}

// AD returns the additional data binding a ciphertext to one registration.
func AD(tenantID, webhookID int64) []byte {
	return fmt.Appendf(nil, "webhook:%d:%d", tenantID, webhookID)
}

// CurrentPrefix is the prefix of every value sealed under the current key:
// a value without it is due for a reseal.
func (b *Box) CurrentPrefix() string { return keyed + b.current + ":" }

// Seal encrypts plaintext bound to ad under the current key and returns
// printable text naming that key.
func (b *Box) Seal(plaintext string, ad []byte) (string, error) {
	aead := b.aeads[b.current]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sealing: nonce: %w", err)
	}
	out := aead.Seal(nonce, nonce, []byte(plaintext), ad)
	return b.CurrentPrefix() + base64.RawStdEncoding.EncodeToString(out), nil
}

// Open decrypts what Seal produced with the same ad, under the key the
// value names (or, for a legacy value, the ring's key that authenticates
// it).
func (b *Box) Open(ciphertext string, ad []byte) (string, error) {
	if rest, ok := strings.CutPrefix(ciphertext, legacy); ok {
		for _, aead := range b.order {
			if pt, err := open(aead, rest, ad); err == nil {
				return pt, nil
			}
		}
		return "", ErrDecrypt
	}
	id, rest, ok := KeyID(ciphertext)
	if !ok || id == "" {
		return "", ErrDecrypt
	}
	aead, ok := b.aeads[id]
	if !ok {
		return "", fmt.Errorf("%w (key %s)", ErrUnknownKey, id)
	}
	return open(aead, rest, ad)
}

// KeyID returns the id of the key that sealed ciphertext ("" for a legacy
// value) and the encrypted part; ok is false when ciphertext is not a
// sealed value.
func KeyID(ciphertext string) (id, rest string, ok bool) {
	if rest, ok := strings.CutPrefix(ciphertext, legacy); ok {
		return "", rest, true
	}
	rest, ok = strings.CutPrefix(ciphertext, keyed)
	if !ok {
		return "", "", false
	}
	id, rest, ok = strings.Cut(rest, ":")
	if !ok || len(id) != keyring.IDLen {
		return "", "", false
	}
	return id, rest, true
}

// Reseal returns ciphertext sealed under the current key: unchanged when it
// already is, else opened and sealed again (same ad).
func (b *Box) Reseal(ciphertext string, ad []byte) (out string, changed bool, err error) {
	if strings.HasPrefix(ciphertext, b.CurrentPrefix()) {
		return ciphertext, false, nil
	}
	pt, err := b.Open(ciphertext, ad)
	if err != nil {
		return "", false, err
	}
	out, err = b.Seal(pt, ad)
	return out, err == nil, err
}

func open(aead cipher.AEAD, text string, ad []byte) (string, error) {
	raw, err := base64.RawStdEncoding.DecodeString(text)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return "", ErrDecrypt
	}
	n := aead.NonceSize()
	pt, err := aead.Open(nil, raw[:n], raw[n:], ad)
	if err != nil {
		return "", ErrDecrypt
	}
	return string(pt), nil
}
