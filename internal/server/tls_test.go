package server_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/config"
)

// TestTLSVersions checks each protocol version with a raw handshake against
// the serving code path (server.Listen + Serve, certificate from
// FINSVC_TLS_CERT/FINSVC_TLS_KEY settings): 1.2 and 1.3 are accepted, 1.0
// and 1.1 are refused by the server with a protocol_version alert, and the
// default negotiation picks 1.3.
func TestTLSVersions(t *testing.T) {
	certFile, keyFile := writeSelfSigned(t, t.TempDir())
	cfg := config.Default()
	if err := cfg.LoadEnvFrom(func(k string) (string, bool) {
		switch k {
		case "FINSVC_TLS_CERT":
			return certFile, true
		case "FINSVC_TLS_KEY":
			return keyFile, true
		case "FINSVC_ADDR":
			return "127.0.0.1:0", true
		}
		return "", false
	}); err != nil {
		t.Fatal(err)
	}
	s, _, _ := start(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure") }))
	addr := s.Addr().String()

	handshake := func(minV, maxV uint16) (*tls.ConnectionState, error) {
		d := &net.Dialer{Timeout: 5 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{
			InsecureSkipVerify: true, // self-signed test certificate
			MinVersion:         minV, MaxVersion: maxV,
		})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		st := conn.ConnectionState()
		return &st, nil
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		st, err := handshake(v, v)
		if err != nil {
			t.Fatalf("%s handshake refused: %v", tls.VersionName(v), err)
		}
		if st.Version != v {
			t.Fatalf("negotiated %s, want %s", tls.VersionName(st.Version), tls.VersionName(v))
		}
	}
	if st, err := handshake(tls.VersionTLS12, tls.VersionTLS13); err != nil || st.Version != tls.VersionTLS13 {
		t.Fatalf("default negotiation: %v, %v; want TLS 1.3", st, err)
	}
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		_, err := handshake(v, v)
		if err == nil {
			t.Fatalf("%s handshake succeeded; the minimum is TLS 1.2", tls.VersionName(v))
		}
		// The server's refusal, not some unrelated failure.
		var alert tls.AlertError
		if !errors.As(err, &alert) && !strings.Contains(err.Error(), "protocol version") {
			t.Fatalf("%s refused with %v; want a protocol_version alert", tls.VersionName(v), err)
		}
		if errors.As(err, &alert) && alert != 70 { // protocol_version
			t.Fatalf("%s refused with alert %d (%v); want 70 protocol_version", tls.VersionName(v), alert, err)
		}
	}
}
