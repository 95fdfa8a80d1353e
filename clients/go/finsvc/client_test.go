package finsvc_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/clients/go/finsvc"
)

// recorder answers every request with an empty client list and remembers
// where it went.
type recorder struct{ reqs []*http.Request }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.reqs = append(r.reqs, req)
	return &http.Response{
		StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"data":[],"meta":{"current_page":1,"per_page":25,"total":0}}`)),
	}, nil
}

func TestNewAddressesTheTenant(t *testing.T) {
	ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok123"})
	cases := []struct {
		base, org         string
		opts              []finsvc.Option
		wantURL, wantHost string
	}{
		{"https://finsvc.example.com", "acme", nil, "https://acme.finsvc.example.com/api/1.0/clients", "acme.finsvc.example.com"},
		{"https://finsvc.example.com:8443/", "acme", nil, "https://acme.finsvc.example.com:8443/api/1.0/clients", "acme.finsvc.example.com:8443"},
		{"https://acme.finsvc.example.com", "acme", nil, "https://acme.finsvc.example.com/api/1.0/clients", "acme.finsvc.example.com"},
		{"http://127.0.0.1:8080", "acme", nil, "http://127.0.0.1:8080/api/1.0/clients", "acme.localhost:8080"},
		{"http://127.0.0.1:8080", "acme", []finsvc.Option{finsvc.WithBaseDomain("fin.test")}, "http://127.0.0.1:8080/api/1.0/clients", "acme.fin.test:8080"},
		{"http://localhost:8080", "demo", nil, "http://127.0.0.1:8080/api/1.0/clients", "demo.localhost:8080"},
		{"http://demo.localhost:43210", "demo", nil, "http://127.0.0.1:43210/api/1.0/clients", "demo.localhost:43210"},
		{"http://[::1]:9000", "acme", nil, "http://[::1]:9000/api/1.0/clients", "acme.localhost:9000"},
	}
	for _, c := range cases {
		rec := &recorder{}
		cl, err := finsvc.New(c.base, c.org, ts, append(c.opts, finsvc.WithTransport(rec))...)
		if err != nil {
			t.Fatalf("%s: %v", c.base, err)
		}
		resp, err := cl.ListClientsWithResponse(context.Background(), nil)
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("%s: %v", c.base, err)
		}
		r := rec.reqs[0]
		if r.URL.String() != c.wantURL || r.Host != c.wantHost && !(r.Host == "" && r.URL.Host == c.wantHost) {
			t.Errorf("%s, %s: sent to %s with Host %q; want %s with Host %q", c.base, c.org, r.URL, r.Host, c.wantURL, c.wantHost)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer tok123" {
			t.Errorf("%s: Authorization = %q", c.base, got)
		}
	}
}

func TestNewRejects(t *testing.T) {
	ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "x"})
	for _, c := range []struct{ base, org string }{
		{"https://finsvc.example.com", "Acme"},
		{"https://finsvc.example.com", "a"},
		{"https://finsvc.example.com", "acme.evil"},
		{"ftp://finsvc.example.com", "acme"},
		{"finsvc.example.com", "acme"},
		{"://bad", "acme"},
	} {
		if _, err := finsvc.New(c.base, c.org, ts); err == nil {
			t.Errorf("New(%q, %q) accepted", c.base, c.org)
		}
	}
	if _, err := finsvc.New("https://finsvc.example.com", "acme", nil); err == nil {
		t.Error("nil token source accepted")
	}
}
