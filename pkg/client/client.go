// Package client builds a ready-to-use Go client of the finsvc API for one
// tenant: the generated client (gen/apiclient), addressed to the tenant's host,
// authenticating every request with an OAuth 2.0 token source.
//
//	conf := &oauth2.Config{ClientID: id, ClientSecret: secret, Endpoint: …}
//	c, err := client.New("https://finsvc.example.com", "acme", conf.TokenSource(ctx, tok))
//	resp, err := c.ListClientsWithResponse(ctx, nil)
//
// The token source refreshes tokens as needed (oauth2.ReuseTokenSource
// semantics come with oauth2.Config.TokenSource).
package client

import (
	"net/http"

	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/clients/go/finsvc"
	"github.com/finsvc/finsvc/gen/apiclient"
)

// DefaultBaseDomain is the service's default FINSVC_BASE_DOMAIN, used for
// the Host header when baseURL names the server by IP address.
const DefaultBaseDomain = finsvc.DefaultBaseDomain

// Option adjusts New (the installable client's options: one rule for how a
// tenant is addressed).
type Option = finsvc.Option

// WithBaseDomain sets the base domain the tenant host is formed under when
// baseURL is an IP address (default "localhost").
func WithBaseDomain(domain string) Option { return finsvc.WithBaseDomain(domain) }

// WithTransport sets the underlying transport (default
// http.DefaultTransport); the OAuth transport wraps it.
func WithTransport(rt http.RoundTripper) Option { return finsvc.WithTransport(rt) }

// New returns the generated client for tenant org of the service at
// baseURL, sending ts's token as a bearer token on every request. The
// tenant is addressed as the installable client addresses it
// (finsvc.Connection; ARCHITECTURE.md, Tenancy).
func New(baseURL, org string, ts oauth2.TokenSource, opts ...Option) (*apiclient.ClientWithResponses, error) {
	server, hc, err := finsvc.Connection(baseURL, org, ts, opts...)
	if err != nil {
		return nil, err
	}
	return apiclient.NewClientWithResponses(server, apiclient.WithHTTPClient(hc))
}
