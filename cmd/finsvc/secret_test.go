package main

import (
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/keyring"
)

// finsvc secret status and reseal read the key ring as serve does: a
// malformed ring is a usage error naming the setting, and a valid one is
// printed by its ids, never its secrets.
func TestSecretCommands(t *testing.T) {
	dir := t.TempDir()
	cur, prev := strings.Repeat("c", 40), strings.Repeat("p", 40)
	env := map[string]string{"FINSVC_DATA_DIR": dir, "FINSVC_LOG_LEVEL": "warn", "FINSVC_SECRET": cur, "FINSVC_SECRET_PREVIOUS": prev}
	r := exec(t, env, "secret", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "key ring: current "+keyring.ID(cur)+", previous "+keyring.ID(prev)) ||
		!strings.Contains(r.stdout, "every sealed value is under the current key") {
		t.Fatalf("secret status: %+v", r)
	}
	if strings.Contains(r.stdout+r.stderr, cur) || strings.Contains(r.stdout+r.stderr, prev) {
		t.Fatalf("a secret was printed: %+v", r)
	}
	if r := exec(t, env, "secret", "reseal", "--batch", "10"); r.code != 0 || !strings.Contains(r.stdout, "every sealed value is under the current key "+keyring.ID(cur)) {
		t.Fatalf("secret reseal: %+v", r)
	}
	if r := exec(t, env, "secret", "reseal", "--batch", "0"); r.code != 2 {
		t.Fatalf("secret reseal --batch 0: %+v", r)
	}
	env["FINSVC_SECRET_REVOKED"] = "deadbeef"
	if r := exec(t, env, "secret", "status"); r.code != 2 || !strings.Contains(r.stderr, "FINSVC_SECRET_REVOKED") {
		t.Fatalf("malformed ring: %+v", r)
	}
	env["FINSVC_SECRET_REVOKED"] = keyring.ID(prev)
	if r := exec(t, env, "secret", "status"); r.code != 0 || !strings.Contains(r.stdout, keyring.ID(prev)+" (revoked)") {
		t.Fatalf("revoked key: %+v", r)
	}
}

// A replica refuses to start on a malformed key ring, with one line naming
// the setting, before it listens: a previous secret too short, a revoked
// id that names no previous secret, the current secret revoked.
func TestServeRefusesMalformedRing(t *testing.T) {
	cur, prev := strings.Repeat("c", 40), strings.Repeat("p", 40)
	for _, tc := range []struct {
		previous, revoked, want string
	}{
		{"too short", "", "FINSVC_SECRET_PREVIOUS"},
		{prev, keyring.ID(strings.Repeat("x", 40)), "FINSVC_SECRET_REVOKED"},
		{prev, keyring.ID(cur), "FINSVC_SECRET_REVOKED"},
	} {
		env := map[string]string{"FINSVC_DATA_DIR": t.TempDir(), "FINSVC_LOG_LEVEL": "error",
			"FINSVC_SECRET": cur, "FINSVC_SECRET_PREVIOUS": tc.previous, "FINSVC_SECRET_REVOKED": tc.revoked}
		r := exec(t, env, "serve", "--addr", "127.0.0.1:0")
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "listening") || strings.Contains(r.stderr, prev) {
			t.Errorf("serve with previous %q, revoked %q: %+v, want a refusal naming %s", tc.previous, tc.revoked, r, tc.want)
		}
	}
}
