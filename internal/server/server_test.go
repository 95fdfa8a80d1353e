package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/server"
)

func start(t *testing.T, cfg *config.Config, h http.Handler) (*server.Server, context.CancelFunc, chan error) {
	t.Helper()
	s, err := server.Listen(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, h) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, cancel, done
}

func TestServeAndGracefulShutdown(t *testing.T) {
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.ShutdownGrace = 5 * time.Second
	started := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			time.Sleep(300 * time.Millisecond)
		}
		io.WriteString(w, "ok")
	})
	s, cancel, done := start(t, cfg, h)
	if s.Addr().Port == 0 {
		t.Fatal("Addr() has no real port")
	}
	base := "http://" + s.Addr().String()
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}

	// A request in flight at shutdown completes.
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	<-started
	cancel()
	if got := <-slow; got != "ok" {
		t.Errorf("in-flight request during shutdown got %q, want ok", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve = %v, want nil after clean shutdown", err)
	}
	done <- nil // for the cleanup
	if _, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		t.Error("listener still accepts after shutdown")
	}
}

func TestShutdownGraceExceeded(t *testing.T) {
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.ShutdownGrace = 100 * time.Millisecond
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	s, cancel, done := start(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	}))
	go http.Get("http://" + s.Addr().String() + "/")
	<-started
	cancel()
	err := <-done
	done <- nil
	if err == nil || !strings.Contains(err.Error(), "shutdown grace") {
		t.Errorf("Serve = %v, want a grace-exceeded error", err)
	}
}

func TestListenErrors(t *testing.T) {
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	s, err := server.Listen(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg.Addr = s.Addr().String()
	if _, err := server.Listen(cfg, nil); err == nil {
		t.Error("Listen on a taken port succeeded")
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.TLSCert, cfg.TLSKey = "/nonexistent/cert.pem", "/nonexistent/key.pem"
	if _, err := server.Listen(cfg, nil); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("Listen with missing TLS files = %v", err)
	}
}

func TestTLSMinVersion(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	s, _, _ := start(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure") }))
	if !s.TLS() {
		t.Fatal("TLS() = false")
	}
	url := "https://" + s.Addr().String() + "/"
	client := func(maxVersion uint16) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: maxVersion,
		}}}
	}
	resp, err := client(tls.VersionTLS12).Get(url)
	if err != nil {
		t.Fatalf("TLS 1.2: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "secure" || resp.TLS.Version != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 got %q, version %x", b, resp.TLS.Version)
	}
	if _, err := client(tls.VersionTLS11).Get(url); err == nil {
		t.Error("TLS 1.1 handshake succeeded; want refused")
	}
	// Go's TLS server answers plaintext HTTP with a 400, never the page.
	if resp, err := http.Get("http://" + s.Addr().String() + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP served on the TLS port")
		}
	}
}

func writeSelfSigned(t *testing.T, dir string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

// TestAlso: a second address is served with the same handler and closed
// at shutdown like the first.
func TestAlso(t *testing.T) {
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	s, err := server.Listen(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Also("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := s.Also("127.0.0.1:" + strconv.Itoa(s.Addr().Port)); err == nil {
		t.Error("Also bound a port already in use")
	}
	addrs := s.Addrs()
	if len(addrs) != 2 || addrs[0].Port == addrs[1].Port {
		t.Fatalf("Addrs = %v", addrs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	}()
	for _, a := range addrs {
		resp, err := http.Get("http://" + a.String() + "/")
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Errorf("%s answered %q", a, b)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	for _, a := range addrs {
		if c, err := net.Dial("tcp", a.String()); err == nil {
			c.Close()
			t.Errorf("%s still accepts after shutdown", a)
		}
	}
}
