package users

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters. Production uses OWASP's recommended minimum for
// argon2id (19 MiB, 2 passes, 1 lane), a few tens of milliseconds per
// hash. Test binaries use a tiny cost so that suites creating many users
// stay fast under -race; the parameters are stored in every hash, so
// verification never depends on which were current when it was made.
type hashParams struct {
	memory  uint32 // KiB
	time    uint32
	threads uint8
	keyLen  uint32
	saltLen int
}

var params = func() hashParams {
	if testing.Testing() {
		return hashParams{memory: 64, time: 1, threads: 1, keyLen: 32, saltLen: 16}
	}
	return hashParams{memory: 19 * 1024, time: 2, threads: 1, keyLen: 32, saltLen: 16}
}()

// Password length bounds: a floor against trivial passwords, a ceiling so
// that hashing cost cannot be driven up by huge inputs.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
)

// HashPassword returns an argon2id PHC string:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt b64>$<hash b64>.
func HashPassword(password string) (string, error) {
	salt := make([]byte, params.saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, params.time, params.memory, params.threads, params.keyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, params.memory, params.time, params.threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var errBadHash = errors.New("unrecognized password hash")

// VerifyPassword reports whether password matches the PHC hash, comparing
// in constant time. needsRehash is true when the hash was made with other
// parameters than the current ones.
func VerifyPassword(hash, password string) (ok, needsRehash bool, err error) {
	p, salt, key, err := decodeHash(hash)
	if err != nil {
		return false, false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, uint32(len(key)))
	ok = subtle.ConstantTimeCompare(got, key) == 1
	needsRehash = p.memory != params.memory || p.time != params.time || p.threads != params.threads
	return ok, needsRehash, nil
}

func decodeHash(hash string) (p hashParams, salt, key []byte, err error) {
	parts := strings.Split(hash, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errBadHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &p.threads); err != nil ||
		p.memory == 0 || p.time == 0 || p.threads == 0 || p.memory > 1<<22 || p.time > 100 {
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

// dummyHash is verified against when the email is unknown, so that a
// failed login takes about as long whether or not the account exists.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("finsvc-dummy-password")
	if err != nil {
		panic(err)
	}
	return h
})

// GeneratePassword returns a random password (128 bits, URL-safe base64,
// 22 characters) for CLI-created and demo users.
func GeneratePassword() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
