// Package httpclient builds the HTTP client that delivers webhooks to
// customer-controlled URLs.
//
// A webhook target is an arbitrary URL chosen by a tenant, so every request is
// a potential server-side request forgery: "https://169.254.169.254/…" or a
// hostname that resolves to 10.0.0.5 would let a tenant probe our network. The
// client therefore checks the IP address every connection actually goes to —
// after DNS resolution, inside the dialer — with code.dny.dev/ssrf, which
// refuses loopback, private, link-local, unspecified, multicast and the other
// IANA special-purpose ranges for IPv4 and IPv6. Checking at dial time (rather
// than resolving and checking the name up front) also defeats DNS rebinding,
// because the address checked is the address connected to.
//
// The client never uses a proxy (a proxy would do the resolution and bypass
// the guard), never follows redirects (a 3xx to an internal URL is the classic
// bypass, and a 3xx counts as a failed attempt anyway), and callers read
// responses only through ReadCapped so a hostile receiver cannot make a worker
// buffer or drain an endless body.
package httpclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"code.dny.dev/ssrf"
)

// DefaultTimeout bounds one delivery attempt end to end (connect, TLS, write,
// response headers and body). Success is a 2xx within 15 s (ARCHITECTURE.md, Webhooks).
const DefaultTimeout = 15 * time.Second

// ExcerptLimit is the response excerpt size kept in the delivery log.
const ExcerptLimit = 2 << 10

// DrainLimit is the most ReadCapped reads from a response in total. Draining
// a small remainder lets the connection be reused; anything larger is cut off
// by closing the connection, which is cheaper than reading it.
const DrainLimit = 64 << 10

// Options configures New.
type Options struct {
	// AllowPrivate lifts the SSRF guard so loopback and private targets can
	// be reached. Only for tests and `finsvc demo`
	// (FINSVC_WEBHOOK_ALLOW_PRIVATE=true); never in production.
	AllowPrivate bool

	// Timeout bounds a whole attempt, including reading the body.
	// Zero means DefaultTimeout.
	Timeout time.Duration

	// RootCAs replaces the system roots for verifying receivers' TLS
	// certificates (tests trust an httptest TLS server with it). Nil means
	// the system pool.
	RootCAs *x509.CertPool

	// LookupNetIP, when set, replaces DNS resolution for host names; tests
	// use it to make a name resolve to a blocked address without touching
	// DNS. It has the shape of (*net.Resolver).LookupNetIP, and network is
	// "ip". Every address it returns still goes through the guard.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)

	// wrapControl lets this package's tests observe (and fence) every dial
	// the guard sees, so that a guard regression can never turn a test into
	// real traffic to a non-loopback address.
	wrapControl func(next controlFunc) controlFunc
}

// guard is the one rule for which addresses deliveries may reach: any port,
// and the public unicast ranges only (code.dny.dev/ssrf's IANA tables).
var guard = ssrf.New(ssrf.WithAnyPort())

// AddrAllowed reports whether deliveries may connect to a.
func AddrAllowed(a netip.Addr) bool { return guard.SafeAddr(a.Unmap()) == nil }

// Lookup resolves a host name; it has the shape of
// (*net.Resolver).LookupNetIP.
type Lookup = func(ctx context.Context, network, host string) ([]netip.Addr, error)

// BlockedAddr resolves host with lookup (nil: the system resolver) and
// returns an address it resolves to that deliveries may not reach, if any.
// Registration uses it to refuse such targets early with a clear message;
// a name that does not resolve (yet) is not refused, and the dial-time
// guard stays the real defence: DNS can change between registration and
// delivery.
func BlockedAddr(ctx context.Context, host string, lookup Lookup) (netip.Addr, bool) {
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	addrs, err := lookup(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		if !AddrAllowed(a) {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// controlFunc is the type of net.Dialer.Control.
type controlFunc = func(network, address string, c syscall.RawConn) error

// New returns a client for webhook delivery configured as described in the
// package documentation. Create one per process and share it: the transport
// keeps connections to receivers alive between attempts.
func New(opts Options) *http.Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}

	dialer := &net.Dialer{
		Timeout:   5 * time.Second,
		KeepAlive: 30 * time.Second,
	}
	if !opts.AllowPrivate {
		// Any port: receivers legitimately listen on 8443 and friends, and
		// the address checks are what keeps us out of internal networks.
		// Only TCP over IPv4/IPv6 (the guard's default networks).
		dialer.Control = guard.Safe
	}
	if opts.wrapControl != nil {
		dialer.Control = opts.wrapControl(dialer.Control)
	}

	dial := dialer.DialContext
	if opts.LookupNetIP != nil {
		dial = lookupDialer(dialer, opts.LookupNetIP)
	}

	transport := &http.Transport{
		// Never http.ProxyFromEnvironment: a proxy resolves and connects on
		// our behalf, which would bypass the dial-time guard.
		Proxy:       nil,
		DialContext: dial,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12, // spec 5.7
			RootCAs:    opts.RootCAs,
		},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    5 * time.Second,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		MaxResponseHeaderBytes: 64 << 10, // headers are not capped by ReadCapped
		DisableCompression:     true,     // log the bytes sent; no inflating hostile bodies
	}

	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		// A redirect is reported as the 3xx response itself, which the
		// retry policy treats as a failed attempt.
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// lookupDialer resolves host names with lookup and dials the returned
// addresses in order through d, so each one passes d.Control (the guard).
func lookupDialer(d *net.Dialer, lookup func(context.Context, string, string) ([]netip.Addr, error)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, address)
		}
		addrs, err := lookup(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("lookup %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("lookup %s: no addresses", host)
		}
		var first error
		for _, a := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	}
}

// IsBlocked reports whether err (from Client.Do) is the SSRF guard refusing
// the target's address, port or network, as opposed to an ordinary network
// failure. The delivery log reports these as "target address not allowed".
func IsBlocked(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) ||
		errors.Is(err, ssrf.ErrProhibitedPort) ||
		errors.Is(err, ssrf.ErrProhibitedNetwork) ||
		errors.Is(err, ssrf.ErrInvalidHostPort)
}

// ReadCapped reads at most n bytes of resp.Body as an excerpt for the
// delivery log, then drains at most DrainLimit bytes in total and closes the
// body. It never reads more than max(n, DrainLimit) bytes, whatever the
// receiver sends; the client's Timeout bounds how long that may take.
//
// The excerpt is made safe to store as text: invalid UTF-8 (including a rune
// cut at the limit) becomes U+FFFD and NUL bytes are dropped, and it is never
// longer than n bytes. err reports a failure while reading the excerpt (for
// example the timeout); the excerpt read so far is still returned. Whether
// the attempt succeeded is decided by the status code, not by err.
func ReadCapped(resp *http.Response, n int64) (excerpt string, err error) {
	if resp == nil || resp.Body == nil {
		return "", nil
	}
	defer resp.Body.Close()
	if n < 0 {
		n = 0
	}

	buf, err := io.ReadAll(io.LimitReader(resp.Body, n))
	if err == nil && n < DrainLimit {
		// Best effort: a fully read body lets the connection be reused.
		// Errors here do not matter; Close discards the connection.
		_, _ = io.CopyN(io.Discard, resp.Body, DrainLimit-n)
	}
	return sanitize(buf, int(n)), err
}

// sanitize turns raw response bytes into a printable string of at most max
// bytes: Postgres text rejects NUL and invalid UTF-8, and a receiver's error
// page is under no obligation to be either.
func sanitize(b []byte, max int) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", ""), "\uFFFD")
	if len(s) <= max {
		return s
	}
	// Replacements can lengthen the string; trim back to a rune boundary.
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Describe returns a short description of a delivery error for the delivery
// log: a fixed phrase for SSRF refusals and timeouts, otherwise the error
// text without the request URL (targets sometimes carry tokens in the query
// string, and the log already records the target).
func Describe(err error) string {
	switch {
	case err == nil:
		return ""
	case IsBlocked(err):
		return "target address not allowed"
	case isTimeout(err):
		return "timeout"
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err.Error()
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// Reason is a short description of a failed attempt's error that names no
// target: no host, address, port, path or URL, which the error's text
// (and so Describe's) may hold. It is what spans record.
func Reason(err error) string {
	var (
		dns   *net.DNSError
		cert  *tls.CertificateVerificationError
		hdr   tls.RecordHeaderError
		unkCA x509.UnknownAuthorityError
		host  x509.HostnameError
		inv   x509.CertificateInvalidError
	)
	switch {
	case err == nil:
		return ""
	case IsBlocked(err):
		return "target address not allowed"
	case isTimeout(err):
		return "timeout"
	case errors.As(err, &dns):
		return "DNS lookup failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "target unreachable"
	case errors.As(err, &cert), errors.As(err, &unkCA), errors.As(err, &host), errors.As(err, &inv):
		return "TLS certificate not accepted"
	case errors.As(err, &hdr):
		return "TLS handshake failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before a response"
	}
	return "request failed"
}
