package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/app"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// One access log line per request, with request id, tenant, route pattern,
// status and latency, and never the token or the query string.
func TestAccessLog(t *testing.T) {
	var buf syncBuffer
	env := apitest.New(t, apitest.WithApp(app.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil)))))
	acme := env.Tenant("acme")
	tok := acme.AdminToken()

	r1 := acme.Do("GET", "/api/1.0/clients/77?secret=shh", tok, nil)
	r2 := acme.Do("GET", "/api/1.0/me", "wrong-token", nil).Status(t, http.StatusUnauthorized)

	var access []map[string]any
	for _, l := range buf.lines(t) {
		if l["msg"] == "request" {
			access = append(access, l)
		}
	}
	if len(access) != 2 {
		t.Fatalf("%d access log lines, want 2: %v", len(access), access)
	}
	for i, c := range []struct {
		resp   *apitest.Response
		route  string
		status int
	}{{r1, "/api/1.0/clients/:id", r1.Code}, {r2, "/api/1.0/me", 401}} {
		l := access[i]
		if l["request_id"] != c.resp.Header.Get("request_id") || l["request_id"] == "" {
			t.Errorf("line %d request_id = %v, response header %q", i, l["request_id"], c.resp.Header.Get("request_id"))
		}
		if l["tenant"] != "acme" || l["route"] != c.route || l["method"] != "GET" || l["status"] != float64(c.status) {
			t.Errorf("line %d = %v; want tenant acme, route %s, status %d", i, l, c.route, c.status)
		}
		if lat, ok := l["latency_ms"].(float64); !ok || lat < 0 {
			t.Errorf("line %d latency_ms = %v", i, l["latency_ms"])
		}
	}
	buf.mu.Lock()
	all := buf.b.String()
	buf.mu.Unlock()
	for _, secret := range []string{tok, "wrong-token", "shh", "/clients/77"} {
		if strings.Contains(all, secret) {
			t.Errorf("the log contains %q:\n%s", secret, all)
		}
	}
}
