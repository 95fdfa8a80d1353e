package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/finsvc/finsvc/internal/keyring"
)

// MinSecretLen is the minimum length of FINSVC_SECRET.
const MinSecretLen = keyring.MinSecretLen

// Ring returns the key ring of the configured secrets (current Secret,
// SecretPrevious, SecretRevoked); an error names what is malformed. Call
// it after ResolveSecret.
func (c *Config) Ring() (*keyring.Ring, error) {
	return keyring.Parse(c.Secret, c.SecretPrevious, c.SecretRevoked)
}

// ringIDs describes the ring for the startup log (ids only), or "".
func (c *Config) ringIDs() string {
	r, err := c.Ring()
	if err != nil {
		return ""
	}
	return r.String()
}

// SecretFile is the file under DataDir holding a generated secret.
const SecretFile = "secret"

// ResolveSecret makes sure c.Secret is set, given the dialect of the opened
// database ("sqlite" or "postgres"):
//
//   - FINSVC_SECRET set: used as is (Validate checks its length).
//   - SQLite: read <data>/secret, or generate 32 random bytes and persist
//     them there with mode 0600. A single-node install thus keeps its
//     tokens valid across restarts without any setup.
//   - PostgreSQL: an error. Several replicas share one database, and a
//     secret generated per replica would make tokens minted by one replica
//     fail on the others (and all of them fail after every restart), so
//     the operator must provide one shared secret.
//
// generated reports whether a new secret was written. The whole key ring
// is then checked (Ring): a malformed ring refuses the start.
func (c *Config) ResolveSecret(dialect string) (generated bool, err error) {
	generated, err = c.resolveSecret(dialect)
	if err != nil {
		return generated, err
	}
	if _, err := c.Ring(); err != nil {
		return generated, err
	}
	return generated, nil
}

func (c *Config) resolveSecret(dialect string) (generated bool, err error) {
	if c.Secret != "" {
		if len(c.Secret) < MinSecretLen {
			return false, fmt.Errorf("FINSVC_SECRET must be at least %d characters", MinSecretLen)
		}
		return false, nil
	}
	if dialect != "sqlite" {
		return false, fmt.Errorf("FINSVC_SECRET is required with %s (all replicas must share it); generate one with: head -c 32 /dev/urandom | base64", dialect)
	}
	if c.DataDir == "" {
		return false, errors.New("cannot persist a generated secret: no data directory")
	}
	path := filepath.Join(c.DataDir, SecretFile)
	secret, err := readSecret(path)
	if err == nil {
		c.Secret = secret
		return false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	secret, err = writeNewSecret(path)
	if errors.Is(err, fs.ErrExist) {
		// Another process (e.g. a concurrent `finsvc migrate`) won the
		// race; use its secret.
		secret, err = readSecret(path)
	}
	if err != nil {
		return false, err
	}
	c.Secret = secret
	return true, nil
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < MinSecretLen {
		return "", fmt.Errorf("secret file %s: shorter than %d characters", path, MinSecretLen)
	}
	return s, nil
}

func writeNewSecret(path string) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	secret := base64.RawURLEncoding.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create data directory: %w", err)
	}
	// O_EXCL: never overwrite an existing secret, which would invalidate
	// every token issued so far.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write secret: %w", err)
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("write secret: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("write secret: %w", err)
	}
	return secret, nil
}
