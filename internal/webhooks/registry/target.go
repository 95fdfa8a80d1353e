package registry

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/finsvc/finsvc/internal/webhooks/httpclient"
)

// MaxTargetLen bounds a target URL (the OpenAPI document says the same).
const MaxTargetLen = 2000

// ValidateTarget checks a webhook target URL and returns it with its scheme
// and host normalised (lower case, no trailing dot on the name), or a
// message for errors.target. It must be an absolute https:// URL with a host
// (http:// too when allowPrivate, which is only set for tests and demo),
// without credentials or a fragment. An IP literal that deliveries may not
// reach (httpclient.AddrAllowed) is refused up front unless allowPrivate, and
// so are localhost names; other names are resolved at registration
// (Store.checkTarget) and again, authoritatively, at every delivery by the
// dial-time guard.
func ValidateTarget(target string, allowPrivate bool) (normalized, msg string) {
	msg = validateTarget(target, allowPrivate)
	if msg != "" {
		return "", msg
	}
	u, _ := url.Parse(target) // parsed fine above
	u.Scheme = strings.ToLower(u.Scheme)
	host := normalizeHost(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	u.Host = host
	return u.String(), ""
}

// normalizeHost lower-cases a host name and drops its trailing dot
// ("LOCALHOST." is localhost).
func normalizeHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func validateTarget(target string, allowPrivate bool) string {
	if target == "" {
		return "is required"
	}
	if len(target) > MaxTargetLen {
		return "must be at most " + strconv.Itoa(MaxTargetLen) + " characters"
	}
	for _, r := range target {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return "must not contain whitespace or control characters"
		}
	}
	u, err := url.Parse(target)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "must be an absolute https:// URL"
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !allowPrivate {
			return "must use https"
		}
	default:
		return "must use https"
	}
	if u.User != nil {
		return "must not contain credentials"
	}
	if u.Fragment != "" || strings.Contains(target, "#") {
		return "must not contain a fragment"
	}
	host := normalizeHost(u.Hostname())
	if host == "" {
		return "must have a host"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "has an invalid port"
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "has an invalid port"
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && !httpclient.AddrAllowed(addr) {
			return "must not point to a private, loopback or link-local address"
		}
		return ""
	}
	if !validHostname(host) {
		return "has an invalid host name"
	}
	if !allowPrivate && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		return "must not point to a private, loopback or link-local address"
	}
	return ""
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	// "10.1" or "0x7f.1" style numbers are addresses to some resolvers,
	// never names: a top-level label is never all digits.
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != "" && !strings.HasPrefix(strings.ToLower(last), "0x")
}

// resolveTimeout bounds the registration-time lookup of a target's name.
const resolveTimeout = 2 * time.Second

// checkTarget validates and normalises target (ValidateTarget) and, unless
// private targets are allowed, refuses a name that resolves to an address
// deliveries may not reach: the registration fails now, with a message,
// rather than every delivery later.
func (s *Store) checkTarget(ctx context.Context, target string) (normalized, msg string) {
	normalized, msg = ValidateTarget(target, s.allowPrivate)
	if msg != "" || s.allowPrivate {
		return normalized, msg
	}
	u, err := url.Parse(normalized)
	if err != nil {
		return "", "must be an absolute https:// URL"
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return normalized, "" // a literal: ValidateTarget checked it
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	if a, blocked := httpclient.BlockedAddr(ctx, host, s.lookup); blocked {
		return "", fmt.Sprintf("must not point to a private, loopback or link-local address (%s resolves to %s)", host, a)
	}
	return normalized, ""
}
