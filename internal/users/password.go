package users

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// HashParams are the argon2id cost parameters of new hashes. They are
// stored in every hash (PHC string), so verification never depends on which
// were current when a hash was made, and a change only makes old hashes
// "need rehash" at their next successful login.
type HashParams struct {
	MemoryKiB uint32
	Time      uint32 // passes
	Threads   uint8
	KeyLen    uint32
	SaltLen   int
}

// DefaultHashParams is OWASP's recommended minimum for argon2id (19 MiB,
// 2 passes, 1 lane): a few tens of milliseconds per hash. Production uses
// it; test harnesses inject a cheaper set through WithHashParams so that
// suites creating many users stay fast under -race.
var DefaultHashParams = HashParams{MemoryKiB: 19 * 1024, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}

// hasher hashes with one parameter set. Its dummy hash (for unknown
// emails) is made lazily with the same parameters, so that a failed login
// costs the same whether or not the account exists.
type hasher struct {
	p     HashParams
	dummy func() string
}

func newHasher(p HashParams) *hasher {
	h := &hasher{p: p}
	h.dummy = sync.OnceValue(func() string {
		d, err := h.hash("finsvc-dummy-password")
		if err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		return d
	})
	return h
}

// hash returns an argon2id PHC string:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt b64>$<hash b64>.
func (h *hasher) hash(password string) (string, error) {
	params := h.p
	salt := make([]byte, params.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, params.Time, params.MemoryKiB, params.Threads, params.KeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, params.MemoryKiB, params.Time, params.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var errBadHash = errors.New("unrecognized password hash")

// verify reports whether password matches the PHC hash, comparing in
// constant time. needsRehash is true when the hash was made with other
// parameters than h's.
func (h *hasher) verify(hash, password string) (ok, needsRehash bool, err error) {
	p, salt, key, err := decodeHash(hash)
	if err != nil {
		return false, false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(key)))
	ok = subtle.ConstantTimeCompare(got, key) == 1
	needsRehash = p.MemoryKiB != h.p.MemoryKiB || p.Time != h.p.Time || p.Threads != h.p.Threads
	return ok, needsRehash, nil
}

func decodeHash(hash string) (p HashParams, salt, key []byte, err error) {
	parts := strings.Split(hash, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errBadHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil ||
		p.MemoryKiB == 0 || p.Time == 0 || p.Threads == 0 || p.MemoryKiB > 1<<22 || p.Time > 100 {
		return p, nil, nil, errBadHash
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil || len(salt) < 8 {
		return p, nil, nil, errBadHash
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) < 16 {
		return p, nil, nil, errBadHash
	}
	return p, salt, key, nil
}

// GeneratePassword returns a random password (128 bits, URL-safe base64,
// 22 characters) for CLI-created and demo users.
func GeneratePassword() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// HashSecret hashes a secret a person types that is not their password (a
// recovery code of the second factor, internal/mfa) as passwords are
// hashed, so one hashing policy covers every typed secret.
func (s *Store) HashSecret(secret string) (string, error) { return s.hasher.hash(secret) }

// MatchesSecret reports whether secret matches hash (made by HashSecret).
func (s *Store) MatchesSecret(hash, secret string) bool {
	ok, _, err := s.hasher.verify(hash, secret)
	return err == nil && ok
}
