package users

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"

	"github.com/finsvc/finsvc/internal/tenant"
)

// The password policy: the one rule for every password a person chooses
// (API, CLI, console, the change and "choose your password" pages). It
// follows NIST SP 800-63B: a length floor and ceiling, any characters
// (spaces and every script included), no composition rules, and a refusal
// of guessable passwords, with a message that says why. Guessability is
// zxcvbn's estimate (github.com/trustelem/zxcvbn, a port of Dropbox's
// estimator, with its own frequency lists of leaked passwords, words,
// names and keyboard patterns), told the words an attacker of this
// account knows: the organization's slug and name and the user's email.
//
// Generated passwords (one-time passwords, the demo's) are long and
// random; they are not put through the estimator.
const (
	// MinPasswordLen is the floor of a chosen password, in characters
	// (Unicode code points).
	MinPasswordLen = 12
	// MaxPasswordLen bounds what is hashed, so that hashing cost cannot be
	// driven up by huge inputs.
	MaxPasswordLen = 1024
	// MinPasswordScore is zxcvbn's score a password must reach: 3 is
	// "safely unguessable", at least 10^8 guesses, against an attacker
	// who knows the frequency lists.
	MinPasswordScore = 3
	// estimateRunes is how much of a password the estimator reads: its
	// cost grows faster than linearly (seconds for 1,000 characters), and
	// a prefix that is hard to guess makes the whole at least as hard.
	estimateRunes = 100
	// minDistinctRunes: a password of fewer different characters is a
	// repetition, whatever the estimator makes of scripts it does not know.
	minDistinctRunes = 4
)

// Why a chosen password is refused (the field message of "password").
var (
	msgPasswordShort    = fmt.Sprintf("must be at least %d characters; a few unrelated words make a good one", MinPasswordLen)
	msgPasswordLong     = fmt.Sprintf("must be at most %d characters", MaxPasswordLen)
	msgPasswordText     = "must be valid text (UTF-8)"
	msgPasswordCommon   = "is a commonly used password (it appears in lists of leaked passwords); choose another"
	msgPasswordPersonal = "must not be built from your email address or the organization's name"
	msgPasswordPattern  = "is a repetition, a sequence or a keyboard pattern; choose something less predictable"
	msgPasswordGuess    = "is too easy to guess; a few unrelated words make a stronger password"
)

// CheckPassword applies the password policy to a password a person chose
// for the account email in tenant t (nil: no organization words). It
// returns "" when the password is acceptable, otherwise the reason, worded
// as a field message ("password " + reason).
func CheckPassword(password, email string, t *tenant.Tenant) string {
	if !utf8.ValidString(password) {
		return msgPasswordText
	}
	n := utf8.RuneCountInString(password)
	switch {
	case n < MinPasswordLen:
		return msgPasswordShort
	case n > MaxPasswordLen:
		return msgPasswordLong
	}
	probe := password
	if n > estimateRunes {
		probe = string([]rune(password)[:estimateRunes])
	}
	if distinctRunes(probe) < minDistinctRunes {
		return msgPasswordPattern
	}
	hints := PasswordHints(email, t)
	// The words an attacker of this account knows are nearly free guesses:
	// what is left once they are taken out must still be hard to guess on
	// its own, or the password is a variation of them.
	if rest, personal := withoutHints(probe, hints); personal {
		if zxcvbn.PasswordStrength(rest, hints).Score < MinPasswordScore {
			return msgPasswordPersonal
		}
	}
	r := zxcvbn.PasswordStrength(probe, hints)
	if r.Score >= MinPasswordScore {
		return ""
	}
	for _, m := range r.Sequence {
		if m.Pattern == "dictionary" && m.DictionaryName == "passwords" {
			return msgPasswordCommon
		}
	}
	for _, m := range r.Sequence {
		switch m.Pattern {
		case "repeat", "sequence", "spatial":
			return msgPasswordPattern
		}
	}
	return msgPasswordGuess
}

// PasswordHints are the words CheckPassword tells the estimator about:
// the email, its local part and domain and their pieces, and the
// organization's slug and name and their words, in lower case.
func PasswordHints(email string, t *tenant.Tenant) []string {
	var hints []string
	add := func(s string) {
		s = strings.ToLower(strings.TrimSpace(s))
		if utf8.RuneCountInString(s) >= 3 && !slices.Contains(hints, s) {
			hints = append(hints, s)
		}
	}
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	email = NormalizeEmail(email)
	add(email)
	if at := strings.LastIndexByte(email, '@'); at >= 0 {
		local, domain := email[:at], email[at+1:]
		add(local)
		add(domain)
		for _, w := range split(local) {
			add(w)
		}
		labels := strings.Split(domain, ".")
		for i, l := range labels {
			if i < len(labels)-1 || len(labels) == 1 { // not the top-level domain
				add(l)
			}
		}
	}
	if t != nil {
		add(t.Slug)
		add(t.Name)
		for _, s := range []string{t.Slug, t.Name} {
			add(strings.Join(split(s), ""))
			for _, w := range split(s) {
				add(w)
			}
		}
	}
	return hints
}

// withoutHints returns the password with every occurrence of every hint
// (in any case, the longest hints first) taken out, and whether there was
// one.
func withoutHints(password string, hints []string) (string, bool) {
	byLength := slices.Clone(hints)
	slices.SortStableFunc(byLength, func(a, b string) int { return len(b) - len(a) })
	found := false
	for _, h := range byLength {
		re := regexp.MustCompile("(?i)" + regexp.QuoteMeta(h))
		if re.MatchString(password) {
			password, found = re.ReplaceAllLiteralString(password, ""), true
		}
	}
	return password, found
}

func distinctRunes(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}
