package httpapi

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestValidRequestIDIsThePattern: the byte loop accepts exactly what the
// pattern it replaced accepted.
func TestValidRequestIDIsThePattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	cases := []string{"", "a", "abc-123", "A.b_c-9", strings.Repeat("x", 128), strings.Repeat("x", 129),
		"bad id", "<script>", "a\x00", "ä", "a/b", "a\nb", "id\n"}
	const alphabet = "azAZ09._- /\x00\xffé+"
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, rng.IntN(140))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := validRequestID(c), pattern.MatchString(c); got != want {
			t.Fatalf("validRequestID(%q) = %v, the pattern says %v", c, got, want)
		}
	}
}
