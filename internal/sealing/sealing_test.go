package sealing

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/keyring"
)

func TestSealOpen(t *testing.T) {
	b, err := New(keyring.MustNew(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTIzNA=="
	ct, err := b.Seal(secret, AD(1, 7))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ct, secret) || strings.Contains(ct, "c2VjcmV0") {
		t.Fatalf("ciphertext %q reveals the secret", ct)
	}
	ct2, _ := b.Seal(secret, AD(1, 7))
	if ct == ct2 {
		t.Fatal("two seals of one secret are identical (nonce reuse)")
	}
	got, err := b.Open(ct, AD(1, 7))
	if err != nil || got != secret {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// Another row, another tenant, another global secret, tampering: all fail.
	if _, err := b.Open(ct, AD(1, 8)); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("other row: %v", err)
	}
	if _, err := b.Open(ct, AD(2, 7)); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("other tenant: %v", err)
	}
	other, _ := New(keyring.MustNew(strings.Repeat("x", 32)))
	if _, err := other.Open(ct, AD(1, 7)); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("other key: %v", err)
	}
	bad := []byte(ct)
	bad[len(bad)-3] ^= 1
	if _, err := b.Open(string(bad), AD(1, 7)); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("tampered: %v", err)
	}
	for _, s := range []string{"", "v1:", "v2:abc", "v1:!!!"} {
		if _, err := b.Open(s, AD(1, 7)); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("Open(%q): %v", s, err)
		}
	}
	if _, err := New(nil); err == nil {
		t.Fatal("no ring accepted")
	}
}

var (
	oldSecret = "old-secret-" + strings.Repeat("o", 32)
	newSecret = "new-secret-" + strings.Repeat("n", 32)
)

func ring(t *testing.T, cur, prev, revoked string) *keyring.Ring {
	t.Helper()
	r, err := keyring.Parse(cur, prev, revoked)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A value names the key that sealed it; after a rotation it opens under
// that (previous, even revoked) key, a new value is sealed under the new
// key, and a ring without the old key refuses old values by name instead of
// trying keys.
func TestRotation(t *testing.T) {
	oldBox, _ := New(ring(t, oldSecret, "", ""))
	ct, err := oldBox.Seal("s1", AD(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v2:" + keyring.ID(oldSecret) + ":"; !strings.HasPrefix(ct, want) {
		t.Fatalf("sealed %q does not name its key %s", ct, want)
	}
	for _, revoked := range []string{"", keyring.ID(oldSecret)} {
		rotated, _ := New(ring(t, newSecret, oldSecret, revoked))
		if got, err := rotated.Open(ct, AD(1, 1)); err != nil || got != "s1" {
			t.Fatalf("revoked=%q: old value under the rotated ring: %q %v", revoked, got, err)
		}
		ct2, _ := rotated.Seal("s2", AD(1, 1))
		if !strings.HasPrefix(ct2, rotated.CurrentPrefix()) || rotated.CurrentPrefix() != "v2:"+keyring.ID(newSecret)+":" {
			t.Fatalf("new value %q not under the new key", ct2)
		}
		// The ring the other replicas run during a rolling restart
		// (old current, new previous) opens it.
		if got, err := mustBox(t, oldSecret, newSecret).Open(ct2, AD(1, 1)); err != nil || got != "s2" {
			t.Fatalf("new value under the old ring with the new key as previous: %q %v", got, err)
		}
		out, changed, err := rotated.Reseal(ct, AD(1, 1))
		if err != nil || !changed || !strings.HasPrefix(out, rotated.CurrentPrefix()) {
			t.Fatalf("Reseal = %q %v %v", out, changed, err)
		}
		if same, changed, err := rotated.Reseal(out, AD(1, 1)); err != nil || changed || same != out {
			t.Fatalf("Reseal of a current value = %v %v", changed, err)
		}
	}
	newOnly, _ := New(ring(t, newSecret, "", ""))
	if _, err := newOnly.Open(ct, AD(1, 1)); !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), keyring.ID(oldSecret)) {
		t.Fatalf("old value without the old key: %v", err)
	}
	// A forged id naming the current key does not open an old value.
	_, rest, _ := KeyID(ct)
	if _, err := newOnly.Open(newOnly.CurrentPrefix()+rest, AD(1, 1)); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("relabelled value: %v", err)
	}
}

func mustBox(t *testing.T, cur, prev string) *Box {
	t.Helper()
	b, err := New(ring(t, cur, prev, ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Values sealed before the key ring ("v1:", no key id; the format of the
// previous release) open under the ring that holds their secret, current or
// previous, and nowhere else.
func TestLegacyValues(t *testing.T) {
	// What the previous release wrote for "whsec_legacy" under oldSecret,
	// made here the way it made it: HKDF(oldSecret, info), GCM, "v1:".
	legacyValue := legacySeal(t, oldSecret, info, "whsec_legacy", AD(3, 4))
	for _, b := range []*Box{mustBox(t, oldSecret, ""), mustBox(t, newSecret, oldSecret)} {
		if got, err := b.Open(legacyValue, AD(3, 4)); err != nil || got != "whsec_legacy" {
			t.Fatalf("legacy value: %q %v", got, err)
		}
		if _, err := b.Open(legacyValue, AD(3, 5)); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("legacy value on another row: %v", err)
		}
	}
	if _, err := mustBox(t, newSecret, "").Open(legacyValue, AD(3, 4)); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("legacy value without its secret: %v", err)
	}
	if id, _, ok := KeyID(legacyValue); !ok || id != "" {
		t.Fatalf("KeyID(legacy) = %q %v", id, ok)
	}
	out, changed, err := mustBox(t, newSecret, oldSecret).Reseal(legacyValue, AD(3, 4))
	if err != nil || !changed || !strings.HasPrefix(out, "v2:"+keyring.ID(newSecret)+":") {
		t.Fatalf("Reseal(legacy) = %q %v %v", out, changed, err)
	}
}

func legacySeal(t *testing.T, secret, purpose, plaintext string, ad []byte) string {
	t.Helper()
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, purpose, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return "v1:" + base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(plaintext), ad))
}
