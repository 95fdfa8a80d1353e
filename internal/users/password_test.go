package users

import (
	"strings"
	"testing"
)

func TestHashAndVerify(t *testing.T) {
	hs := newHasher(testParams)
	h, err := hs.hash("pässword 1")
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := hs.hash("pässword 1")
	if h == h2 {
		t.Error("two hashes of one password are equal: salt missing")
	}
	if ok, rehash, err := hs.verify(h, "pässword 1"); !ok || rehash || err != nil {
		t.Errorf("Verify(right) = %v, %v, %v", ok, rehash, err)
	}
	if ok, _, err := hs.verify(h, "password 1"); ok || err != nil {
		t.Errorf("Verify(wrong) = %v, %v", ok, err)
	}
	// A hash with other parameters verifies and asks for a rehash.
	hOld, _ := newHasher(HashParams{MemoryKiB: 128, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}).hash("pw")
	if !strings.Contains(hOld, "$m=128,t=2,p=1$") {
		t.Fatalf("PHC string %q lacks its parameters", hOld)
	}
	if ok, rehash, err := hs.verify(hOld, "pw"); !ok || !rehash || err != nil {
		t.Errorf("Verify(old params) = %v, %v, %v; want ok and rehash", ok, rehash, err)
	}
	for _, bad := range []string{"", "plain", "$2a$10$bcrypt", "$argon2id$v=18$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=19$m=64,t=1,p=1$!!$a2V5"} {
		if _, _, err := hs.verify(bad, "x"); err == nil {
			t.Errorf("verify(%q) accepted a malformed hash", bad)
		}
	}
}

func TestGeneratePassword(t *testing.T) {
	a, b := GeneratePassword(), GeneratePassword()
	if a == b || len(a) != 22 || len(a) < MinPasswordLen || CheckPassword(a, "a@b.example", nil) != "" {
		t.Errorf("GeneratePassword = %q, %q", a, b)
	}
}

// testParams is a cheap argon2id cost for this package's tests.
var testParams = HashParams{MemoryKiB: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}
