package oauth_test

import (
	"bytes"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNoSecretsInLogs runs every flow (codes, exchanges, refresh, reuse,
// revoke, errors, pages) with debug logging into a buffer and checks that
// no secret, code or token appears in it, whole or in part.
func TestNoSecretsInLogs(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(logger)
	defer slog.SetDefault(prev)

	s := newServer(t, serverOpt{logger: logger})
	o := s.org(t, "acme", "admin")
	var secrets []string
	secrets = append(secrets, o.secret, testPassword)

	code := o.code(t, o.authParams("state-logs-1"))
	secrets = append(secrets, code)
	r := o.token(t, o.codeGrant(code), reqStyle{json: true})
	access, refresh := r.str("access_token"), r.str("refresh_token")
	secrets = append(secrets, access, refresh)
	o.me(t, access)
	o.token(t, o.codeGrant(code), reqStyle{}) // replay
	a2, r2 := o.tokens(t)
	secrets = append(secrets, a2, r2)
	r = o.token(t, o.refreshGrant(r2), reqStyle{basic: true})
	secrets = append(secrets, r.str("access_token"), r.str("refresh_token"))
	o.token(t, o.refreshGrant(r2), reqStyle{}) // reuse
	bad := o.codeGrant("ory_ac_x.y")
	bad.Set("client_secret", "not-the-secret-"+o.secret[:8])
	o.token(t, bad, reqStyle{})
	o.post(t, "/api/oauth/revoke", url.Values{"token": {a2}, "client_id": {o.clientID}, "client_secret": {o.secret}}, reqStyle{})
	o.me(t, a2)
	o.me(t, refresh)

	logs := buf.String()
	if !strings.Contains(logs, `"route":"/api/oauth/token"`) {
		t.Fatalf("the access log did not capture the flow: %s", logs)
	}
	for _, sec := range secrets {
		if sec == "" {
			t.Fatal("empty secret in the list")
		}
		// The token and each half of it (random part, signature).
		parts := append([]string{sec}, strings.Split(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(sec, "ory_at_"), "ory_rt_"), "ory_ac_"), ".")...)
		for _, p := range parts {
			if len(p) >= 16 && strings.Contains(logs, p) {
				t.Errorf("a secret appears in the logs: %.6s…", p)
			}
		}
	}
}
