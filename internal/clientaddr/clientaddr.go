// Package clientaddr names the network client of a request: the one rule for
// which address a per-address budget (failed authentications, sign-in
// attempts, the authorization pages) is charged to.
package clientaddr

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// From returns the address the request came from. Behind a trusted proxy
// (trustProxy) it is the last X-Forwarded-For hop, the one that proxy
// appended; never the first, which the client writes itself. Otherwise it is
// the connection's peer.
//
// IPv6 addresses are reduced to their /64 network: a single host usually
// holds a whole /64 and could otherwise take a fresh budget per address.
func From(r *http.Request, trustProxy bool) string {
	raw := ""
	if trustProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			raw = strings.TrimSpace(hops[len(hops)-1])
		}
	}
	if raw == "" {
		raw = r.RemoteAddr
		if host, _, err := net.SplitHostPort(raw); err == nil {
			raw = host
		}
	}
	return normalize(raw)
}

func normalize(s string) string {
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return s // not an address (a test's RemoteAddr): use it as it is
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
