package sealing

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := New(strings.Repeat("k", 32))
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
	other, _ := New(strings.Repeat("x", 32))
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
	if _, err := New(""); err == nil {
		t.Fatal("empty global secret accepted")
	}
}
