package keyring

import (
	"strings"
	"testing"
)

var (
	a = strings.Repeat("a", 32)
	b = strings.Repeat("b", 40)
	c = "c-secret-" + strings.Repeat("c", 30)
)

func TestParse(t *testing.T) {
	r, err := Parse(a, b+", "+c, ID(c))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.IDs(); len(got) != 3 || got[0] != ID(a) || got[1] != ID(b) || got[2] != ID(c) {
		t.Fatalf("IDs = %v", got)
	}
	if r.Current().ID != ID(a) || string(r.Current().Secret()) != a {
		t.Fatalf("current = %+v", r.Current())
	}
	v := r.Verifiers()
	if len(v) != 2 || v[0].ID != ID(a) || v[1].ID != ID(b) {
		t.Fatalf("verifiers %v: the revoked key must not verify", v)
	}
	if k, ok := r.Key(ID(c)); !ok || !k.Revoked || string(k.Secret()) != c {
		t.Fatalf("revoked key must still be in the ring (to open): %+v %v", k, ok)
	}
	if s := r.String(); strings.Contains(s, a) || strings.Contains(s, b) || !strings.Contains(s, ID(c)+" (revoked)") {
		t.Fatalf("String = %q", s)
	}
	// Whitespace and commas both separate.
	r2, err := Parse(a, " "+b+"\n"+c+" ,", "")
	if err != nil || len(r2.IDs()) != 3 {
		t.Fatalf("Parse with spaces: %v %v", r2, err)
	}
}

// The id depends on the secret only: every replica and every release
// computes the same one, and a different secret gets a different id.
func TestIDStable(t *testing.T) {
	if ID(a) != ID(strings.Repeat("a", 32)) {
		t.Fatal("ID is not deterministic")
	}
	// Pinned: changing the derivation would orphan every stored value.
	if got := ID("0123456789abcdef0123456789abcdef"); got != pinnedID {
		t.Fatalf("ID changed: %s, want %s", got, pinnedID)
	}
	if ID(a) == ID(b) || len(ID(a)) != IDLen || strings.Trim(ID(a), "0123456789abcdef") != "" {
		t.Fatalf("ids %s %s", ID(a), ID(b))
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, cur, prev, rev, want string
	}{
		{"no current", "", "", "", "FINSVC_SECRET is not set"},
		{"previous without current", "", b, "", "need FINSVC_SECRET"},
		{"short current", "short", "", "", "at least 32"},
		{"short previous", a, b + ",short", "", "secret 2 must be at least 32"},
		{"previous is current", a, a, "", "is the current secret"},
		{"listed twice", a, b + "," + b, "", "listed twice"},
		{"revoke current", a, b, ID(a), "is the current secret"},
		{"revoke unknown", a, b, "deadbeef", `"deadbeef" is not in FINSVC_SECRET_PREVIOUS`},
		{"revoke without previous", a, "", ID(b), "is not in FINSVC_SECRET_PREVIOUS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.cur, tc.prev, tc.rev)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			for _, s := range []string{a, b} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error reveals a secret: %v", err)
				}
			}
		})
	}
}

const pinnedID = "b84d0cf2"
