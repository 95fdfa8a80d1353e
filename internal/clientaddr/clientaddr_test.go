package clientaddr

import (
	"net/http/httptest"
	"testing"
)

func TestFrom(t *testing.T) {
	cases := []struct {
		name   string
		remote string
		xff    []string
		trust  bool
		want   string
	}{
		{"peer v4", "192.0.2.7:5555", nil, false, "192.0.2.7"},
		{"xff ignored without a trusted proxy", "192.0.2.7:5555", []string{"203.0.113.9"}, false, "192.0.2.7"},
		{"last hop behind a trusted proxy", "10.0.0.1:80", []string{"198.51.100.1, 203.0.113.9"}, true, "203.0.113.9"},
		{"last header wins", "10.0.0.1:80", []string{"198.51.100.1", "203.0.113.10"}, true, "203.0.113.10"},
		{"empty xff falls back to the peer", "10.0.0.1:80", []string{""}, true, "10.0.0.1"},
		{"v6 reduced to its /64", "[2001:db8:1:2:aaaa::1]:443", nil, false, "2001:db8:1:2::/64"},
		{"another address of the same /64", "[2001:db8:1:2:bbbb::9]:443", nil, false, "2001:db8:1:2::/64"},
		{"v4-mapped v6 is v4", "[::ffff:192.0.2.7]:1", nil, false, "192.0.2.7"},
		{"not an address", "pipe", nil, false, "pipe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := From(r, c.trust); got != c.want {
				t.Fatalf("From = %q, want %q", got, c.want)
			}
		})
	}
}
