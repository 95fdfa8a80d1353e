package registry

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// MaxTargetLen bounds a target URL (the OpenAPI document says the same).
const MaxTargetLen = 2000

// ValidateTarget checks a webhook target URL and returns a message for
// errors.target, or "" when it is acceptable. It must be an absolute
// https:// URL with a host (http:// too when allowPrivate, which is only set
// for tests and demo), without credentials or a fragment. An IP literal in a
// non-public range is refused up front unless allowPrivate; host names are
// checked after resolution, at every delivery, by the SSRF guard.
func ValidateTarget(target string, allowPrivate bool) string {
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
	host := u.Hostname()
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
		if !allowPrivate && !publicAddr(addr) {
			return "must not point to a private, loopback or link-local address"
		}
		return ""
	}
	if !validHostname(host) {
		return "has an invalid host name"
	}
	if !allowPrivate && (strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")) {
		return "must not point to a private, loopback or link-local address"
	}
	return ""
}

// publicAddr is a coarse first check for IP literals; the dial-time guard
// (code.dny.dev/ssrf) is the authoritative one.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() && !a.IsLinkLocalUnicast()
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
