// Package keyring is the service's ring of global secrets: one current
// secret, which signs tokens and seals data, and the previous ones, which
// only verify and open, so that the secret can be rotated without downtime.
//
// The ring is configured by three settings (environment only):
//
//	FINSVC_SECRET            the current secret
//	FINSVC_SECRET_PREVIOUS   previous secrets, separated by commas or spaces
//	FINSVC_SECRET_REVOKED    ids of previous secrets that leaked
//
// Each secret's id is derived from the secret itself (ID), so every
// replica computes the same ids without configuring them, and an id can be
// printed and logged: it reveals nothing of the secret. A revoked secret no
// longer verifies anything (tokens, forms and cookies made with it are
// refused at once) but still opens sealed data until `finsvc secret
// reseal` has moved that data to the current secret: a database sealed
// under a leaked secret is no safer for refusing to read it.
package keyring

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// MinSecretLen is the minimum length of every secret of the ring.
const MinSecretLen = 32

// IDLen is the length of a key id (hex digits).
const IDLen = 8

// Key is one secret of the ring.
type Key struct {
	// ID identifies the secret (ID(secret)); sealed values record it.
	ID string
	// Revoked: the secret leaked; it opens sealed data but verifies
	// nothing.
	Revoked bool
	secret  []byte
}

// Secret returns the secret's bytes (for key derivation only).
func (k Key) Secret() []byte { return k.secret }

// Ring is the parsed key ring. It is immutable and safe for concurrent use.
type Ring struct {
	keys []Key // keys[0] is the current key
}

// ID returns the id of secret: the first IDLen hex digits of
// HMAC-SHA256(secret, "finsvc/keyring/id/v1"), stable across processes and
// versions.
func ID(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("finsvc/keyring/id/v1"))
	return hex.EncodeToString(m.Sum(nil))[:IDLen]
}

// New returns a ring of the one secret current (tests, single-key setups).
func New(current string) (*Ring, error) { return Parse(current, "", "") }

// Parse builds the ring from the three settings' values (see the package
// comment). It refuses a ring that would make a replica misbehave: a
// missing or short secret, a secret listed twice, a revoked id that names
// no previous secret, or the current secret revoked.
func Parse(current, previous, revoked string) (*Ring, error) {
	if current == "" {
		if strings.TrimSpace(previous) != "" || strings.TrimSpace(revoked) != "" {
			return nil, errors.New("FINSVC_SECRET_PREVIOUS and FINSVC_SECRET_REVOKED need FINSVC_SECRET (the current secret)")
		}
		return nil, errors.New("FINSVC_SECRET is not set")
	}
	if len(current) < MinSecretLen {
		return nil, fmt.Errorf("FINSVC_SECRET must be at least %d characters", MinSecretLen)
	}
	r := &Ring{keys: []Key{{ID: ID(current), secret: []byte(current)}}}
	for i, s := range fields(previous) {
		if len(s) < MinSecretLen {
			return nil, fmt.Errorf("FINSVC_SECRET_PREVIOUS: secret %d must be at least %d characters", i+1, MinSecretLen)
		}
		id := ID(s)
		if _, ok := r.Key(id); ok {
			if id == r.keys[0].ID {
				return nil, fmt.Errorf("FINSVC_SECRET_PREVIOUS: secret %d (key %s) is the current secret", i+1, id)
			}
			return nil, fmt.Errorf("FINSVC_SECRET_PREVIOUS: secret %d (key %s) is listed twice", i+1, id)
		}
		r.keys = append(r.keys, Key{ID: id, secret: []byte(s)})
	}
	for _, id := range fields(revoked) {
		if id == r.keys[0].ID {
			return nil, fmt.Errorf("FINSVC_SECRET_REVOKED: key %s is the current secret; make a new secret current first", id)
		}
		found := false
		for i := range r.keys[1:] {
			if r.keys[i+1].ID == id {
				r.keys[i+1].Revoked, found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("FINSVC_SECRET_REVOKED: key %q is not in FINSVC_SECRET_PREVIOUS (ids: %s)", id, strings.Join(r.IDs()[1:], ", "))
		}
	}
	return r, nil
}

// fields splits a list on commas and white space.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// Current returns the key that signs and seals.
func (r *Ring) Current() Key { return r.keys[0] }

// Key returns the key with id, revoked or not.
func (r *Ring) Key(id string) (Key, bool) {
	for _, k := range r.keys {
		if k.ID == id {
			return k, true
		}
	}
	return Key{}, false
}

// Keys returns every key, current first: what may open sealed data.
func (r *Ring) Keys() []Key { return append([]Key(nil), r.keys...) }

// Verifiers returns the keys whose signatures are accepted, current first:
// every key but the revoked ones.
func (r *Ring) Verifiers() []Key {
	var out []Key
	for _, k := range r.keys {
		if !k.Revoked {
			out = append(out, k)
		}
	}
	return out
}

// IDs returns the ids of every key, current first.
func (r *Ring) IDs() []string {
	out := make([]string, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.ID
	}
	return out
}

// String describes the ring without its secrets, for the startup log:
// "current 1a2b3c4d, previous 5e6f7a8b (revoked)".
func (r *Ring) String() string {
	var b strings.Builder
	b.WriteString("current " + r.keys[0].ID)
	for i, k := range r.keys[1:] {
		if i == 0 {
			b.WriteString(", previous ")
		} else {
			b.WriteString(" ")
		}
		b.WriteString(k.ID)
		if k.Revoked {
			b.WriteString(" (revoked)")
		}
	}
	return b.String()
}

// MustNew is New for tests: it panics on a malformed secret.
func MustNew(current string) *Ring {
	r, err := New(current)
	if err != nil {
		panic(err)
	}
	return r
}
