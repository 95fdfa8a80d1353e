// Package finsvc is the Go client of the finsvc API, generated from the
// published contract (openapi/finsvc.yaml; finsvc.gen.go: the wire models and
// ClientWithResponses), plus New, which addresses one tenant and
// authenticates every request with an OAuth 2.0 token source.
//
//	conf := &oauth2.Config{ClientID: id, ClientSecret: secret, Endpoint: …}
//	c, err := finsvc.New("https://finsvc.example.com", "acme", conf.TokenSource(ctx, tok))
//	resp, err := c.ListClientsWithResponse(ctx, nil)
//
// The token source refreshes tokens as needed (oauth2.ReuseTokenSource
// semantics come with oauth2.Config.TokenSource). Money amounts
// (credit_limit, `format: decimal` in the spec) are Decimal: exact decimal
// text, never a float.
package finsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Decimal is a money amount (`type: number, format: decimal` in the spec):
// the JSON number's digits exactly as the service wrote them, and sent back
// as the same number literal, never rounded through float64 (a float64
// reads 999999999999999999.99 as 1e18). It is json.Number, so
// Decimal("250000.25") writes 250000.25 and encoding/json refuses text that
// is not a number; compare and compute with math/big (new(big.Rat).SetString)
// or a decimal library of your choice.
type Decimal = json.Number

// DefaultBaseDomain is the service's default FINSVC_BASE_DOMAIN, used for
// the Host header when baseURL names the server by IP address.
const DefaultBaseDomain = "localhost"

var slugRE = regexp.MustCompile(`^[a-z0-9-]{2,63}$`)

// Option adjusts New.
type Option func(*options)

type options struct {
	baseDomain string
	transport  http.RoundTripper
}

// WithBaseDomain sets the base domain the tenant host is formed under when
// baseURL is an IP address (default "localhost": tenant acme is then
// addressed as acme.localhost).
func WithBaseDomain(domain string) Option { return func(o *options) { o.baseDomain = domain } }

// WithTransport sets the underlying transport (default
// http.DefaultTransport); the OAuth transport wraps it.
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// New returns the generated client for tenant org of the service at
// baseURL, sending ts's token as a bearer token on every request.
//
// The tenant is addressed by its host, org.<domain>, as the service
// requires :
//   - baseURL "https://finsvc.example.com" → https://acme.finsvc.example.com;
//   - a baseURL already naming the tenant ("http://acme.localhost:8080") is
//     used as is;
//   - a baseURL with an IP address ("http://127.0.0.1:8080") is dialled as
//     given, with Host: acme.localhost:8080 (see WithBaseDomain);
//   - *.localhost names are dialled on 127.0.0.1 (RFC 6761), since not every
//     resolver maps them to loopback.
func New(baseURL, org string, ts oauth2.TokenSource, opts ...Option) (*ClientWithResponses, error) {
	server, hc, err := Connection(baseURL, org, ts, opts...)
	if err != nil {
		return nil, err
	}
	return NewClientWithResponses(server, WithHTTPClient(hc))
}

// Connection is what New gives the generated client: the server URL to
// dial and an HTTP client that sends the tenant's Host and ts's token and
// follows no redirect. Other generated clients of the same contract (the
// server's own gen/apiclient) use it to address a tenant the same way.
func Connection(baseURL, org string, ts oauth2.TokenSource, opts ...Option) (server string, hc *http.Client, err error) {
	o := options{baseDomain: DefaultBaseDomain, transport: http.DefaultTransport}
	for _, opt := range opts {
		opt(&o)
	}
	if !slugRE.MatchString(org) {
		return "", nil, fmt.Errorf("finsvc: organization %q is not a tenant slug ([a-z0-9-]{2,63})", org)
	}
	if ts == nil {
		return "", nil, fmt.Errorf("finsvc: a token source is required")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", nil, fmt.Errorf("finsvc: base URL %q must be an absolute http(s) URL", baseURL)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	var tenantHost string
	switch {
	case strings.HasPrefix(host, org+"."):
		tenantHost = host
	case net.ParseIP(host) != nil:
		tenantHost = org + "." + strings.ToLower(o.baseDomain)
	default:
		tenantHost = org + "." + host
	}
	hostHeader := tenantHost
	if port != "" {
		hostHeader = net.JoinHostPort(tenantHost, port)
	}
	dial := *u
	dial.RawQuery, dial.Fragment = "", ""
	dial.Path = strings.TrimRight(u.Path, "/")
	switch {
	case net.ParseIP(host) != nil:
		// dial the address given
	case tenantHost == "localhost" || strings.HasSuffix(tenantHost, ".localhost"):
		dial.Host = "127.0.0.1"
		if port != "" {
			dial.Host = net.JoinHostPort("127.0.0.1", port)
		}
	default:
		dial.Host = hostHeader
	}
	var rt http.RoundTripper = o.transport
	if dial.Host != hostHeader {
		rt = &hostTransport{host: hostHeader, base: rt}
	}
	hc = &http.Client{
		Transport: &oauth2.Transport{Source: ts, Base: rt},
		// The API never redirects; following one would resend the
		// bearer token to wherever it points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return dial.String(), hc, nil
}

// LocalhostClient is an HTTP client that dials every *.localhost name on
// 127.0.0.1 (RFC 6761), for the token requests of the oauth2 package against
// a local demo (`finsvc demo` at http://demo.localhost:8080), since not every
// resolver maps those names to loopback:
//
//	ctx = context.WithValue(ctx, oauth2.HTTPClient, finsvc.LocalhostClient())
//
// New does the same for API calls by itself; real deployments need neither.
func LocalhostClient() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && (host == "localhost" || strings.HasSuffix(strings.ToLower(host), ".localhost")) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// hostTransport sends every request with a fixed Host header.
type hostTransport struct {
	host string
	base http.RoundTripper
}

func (t *hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Host = t.host
	return t.base.RoundTrip(r)
}
