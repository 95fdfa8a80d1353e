package httpclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"code.dny.dev/ssrf"
)

// dialLog records every address the dialer's Control saw and what the guard
// said. It also fences the test: if the guard ever let a non-loopback address
// through, the dial is refused here, before connect, so a regression fails the
// test instead of sending traffic anywhere.
type dialLog struct {
	mu    sync.Mutex
	seen  []string
	guard []error
}

var errFenced = errors.New("test fence: guard allowed a non-loopback address")

func (l *dialLog) wrap(next controlFunc) controlFunc {
	return func(network, address string, c syscall.RawConn) error {
		var err error
		if next != nil {
			err = next(network, address, c)
		}
		l.mu.Lock()
		l.seen = append(l.seen, address)
		l.guard = append(l.guard, err)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		ap, perr := netip.ParseAddrPort(address)
		if perr != nil || !ap.Addr().Unmap().IsLoopback() {
			return errFenced
		}
		return nil
	}
}

func (l *dialLog) snapshot() ([]string, []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...), append([]error(nil), l.guard...)
}

// countingListener counts accepted connections, to prove a blocked loopback
// dial never reached the socket.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func newCountingServer(t *testing.T, h http.Handler) (*httptest.Server, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = cl
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cl
}

func TestGuardBlocksSpecialAddresses(t *testing.T) {
	// The loopback target is a live server, so "blocked" cannot be confused
	// with "connection refused": were the guard missing, this would succeed.
	srv, ln := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	loopPort := srv.Listener.Addr().(*net.TCPAddr).Port

	resolve := map[string][]netip.Addr{
		"internal.example":   {netip.MustParseAddr("10.1.2.3")},
		"metadata.example":   {netip.MustParseAddr("169.254.169.254")},
		"rebind.example":     {netip.MustParseAddr("127.0.0.1")},
		"v6-private.example": {netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fe80::1")},
	}
	lookup := func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if a, ok := resolve[host]; ok {
			return a, nil
		}
		return nil, errors.New("test resolver: unknown host " + host)
	}

	tests := []struct {
		name   string
		url    string
		lookup bool // use the test resolver instead of the system one
	}{
		{"IPv4 loopback (live server)", "http://127.0.0.1:" + itoa(loopPort) + "/", false},
		{"IPv4 loopback other", "https://127.8.9.10/", false},
		{"RFC1918 10/8", "https://10.0.0.1/", false},
		{"RFC1918 172.16/12", "https://172.16.5.4/", false},
		{"RFC1918 192.168/16", "https://192.168.1.1/", false},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", false},
		{"unspecified v4", "https://0.0.0.0/", false},
		{"CGNAT", "https://100.64.0.1/", false},
		{"multicast v4", "https://224.0.0.1/", false},
		{"broadcast", "https://255.255.255.255/", false},
		{"IPv6 loopback", "https://[::1]/", false},
		{"IPv6 unspecified", "https://[::]/", false},
		{"IPv6 link-local", "https://[fe80::1]/", false},
		{"IPv6 ULA", "https://[fd00::1]/", false},
		{"IPv6 multicast", "https://[ff02::1]/", false},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/", false},
		{"IPv4-mapped metadata", "https://[::ffff:169.254.169.254]/", false},
		{"localhost via system resolver", "http://localhost:" + itoa(loopPort) + "/", false},
		{"name resolving to 10/8", "https://internal.example/", true},
		{"name resolving to metadata", "https://metadata.example/", true},
		{"name resolving to loopback", "http://rebind.example:" + itoa(loopPort) + "/", true},
		{"name resolving to v6 private only", "https://v6-private.example/", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := &dialLog{}
			opts := Options{Timeout: 3 * time.Second, wrapControl: log.wrap}
			if tc.lookup {
				opts.LookupNetIP = lookup
			}
			c := New(opts)
			resp, err := c.Post(tc.url, "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("request to %s succeeded, want SSRF refusal", tc.url)
			}
			seen, guard := log.snapshot()
			if len(seen) == 0 {
				if isNoIPv6(err) {
					t.Skipf("no IPv6 sockets here: %v", err)
				}
				t.Fatalf("no dial reached the guard; err = %v", err)
			}
			for i, g := range guard {
				if !errors.Is(g, ssrf.ErrProhibitedIP) {
					t.Errorf("guard verdict for %s = %v, want ErrProhibitedIP", seen[i], g)
				}
			}
			if !IsBlocked(err) {
				t.Fatalf("IsBlocked(%v) = false", err)
			}
			if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, errFenced) {
				t.Fatalf("err = %v, want the guard's refusal, not a connection attempt", err)
			}
			if got := Describe(err); got != "target address not allowed" {
				t.Errorf("Describe = %q", got)
			}
		})
	}
	if n := ln.accepted.Load(); n != 0 {
		t.Fatalf("loopback server accepted %d connections through the guard", n)
	}
}

func isNoIPv6(err error) bool {
	return errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EADDRNOTAVAIL) ||
		errors.Is(err, syscall.ENETUNREACH)
}

func itoa(n int) string { return strconv.Itoa(n) }

var quietLog = log.New(io.Discard, "", 0)

func TestAllowPrivateReachesLocalServer(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "queued")
	}))
	srv.Config.ErrorLog = quietLog // the untrusted-certificate half logs a handshake error
	srv.StartTLS()
	defer srv.Close()

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c := New(Options{AllowPrivate: true, RootCAs: pool, Timeout: 5 * time.Second})

	resp, err := c.Post(srv.URL, "application/json", strings.NewReader(`{"id":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	excerpt, err := ReadCapped(resp, ExcerptLimit)
	if err != nil || excerpt != "queued" || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d excerpt %q err %v", resp.StatusCode, excerpt, err)
	}
	if got.Load() != `{"id":"x"}` {
		t.Fatalf("server got %v", got.Load())
	}

	// The same client without RootCAs must not trust the test certificate.
	resp, err = New(Options{AllowPrivate: true}).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("untrusted certificate accepted")
	}
	var uae x509.UnknownAuthorityError
	if !errors.As(err, &uae) {
		t.Fatalf("err = %v, want unknown authority", err)
	}
	if IsBlocked(err) {
		t.Fatal("a TLS failure classified as blocked")
	}
}

func TestAllowPrivateWithResolver(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	c := New(Options{AllowPrivate: true, LookupNetIP: func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	resp, err := c.Get("http://receiver.test:" + itoa(port) + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestTLS12Minimum(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{MaxVersion: tls.VersionTLS11}
	srv.Config.ErrorLog = quietLog
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	resp, err := New(Options{AllowPrivate: true, RootCAs: pool}).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("TLS 1.1 server accepted")
	}
}

func TestRedirectsNotFollowed(t *testing.T) {
	var followed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		http.Redirect(w, r, "/elsewhere", code)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		followed.Store(true)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := New(Options{AllowPrivate: true})
	for _, code := range []int{301, 302, 303, 307, 308} {
		resp, err := c.Post(srv.URL+"/hook?code="+itoa(code), "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatalf("%d: %v", code, err)
		}
		if _, err := ReadCapped(resp, ExcerptLimit); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != code {
			t.Fatalf("status %d, want the %d itself", resp.StatusCode, code)
		}
	}
	if followed.Load() {
		t.Fatal("a redirect was followed")
	}
}

func TestNoProxyAndTransportSettings(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	c := New(Options{})
	tr := c.Transport.(*http.Transport)
	if tr.Proxy != nil {
		t.Fatal("transport has a Proxy func")
	}
	if tr.TLSClientConfig.MinVersion != tls.VersionTLS12 {
		t.Fatalf("MinVersion %x", tr.TLSClientConfig.MinVersion)
	}
	if c.Timeout != DefaultTimeout {
		t.Fatalf("Timeout %v", c.Timeout)
	}
	if c.CheckRedirect == nil || c.CheckRedirect(nil, nil) != http.ErrUseLastResponse {
		t.Fatal("CheckRedirect does not stop redirects")
	}
	if New(Options{Timeout: time.Second}).Timeout != time.Second {
		t.Fatal("Timeout option ignored")
	}
}

// countingBody counts what is actually read from the network.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func TestReadCappedAgainstEndlessBody(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		chunk := []byte(strings.Repeat("x", 32<<10))
		for {
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	defer close(stop)

	c := New(Options{AllowPrivate: true, Timeout: 10 * time.Second})
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body := &countingBody{ReadCloser: resp.Body}
	resp.Body = body

	start := time.Now()
	excerpt, err := ReadCapped(resp, ExcerptLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(excerpt) != ExcerptLimit {
		t.Fatalf("excerpt %d bytes, want %d", len(excerpt), ExcerptLimit)
	}
	if n := body.n.Load(); n > DrainLimit {
		t.Fatalf("read %d bytes from an endless body, cap is %d", n, DrainLimit)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("ReadCapped took %v against an endless body", d)
	}
}

func TestReadCappedSmallAndEdgeCases(t *testing.T) {
	mk := func(s string) *http.Response {
		return &http.Response{Body: io.NopCloser(strings.NewReader(s))}
	}
	tests := []struct {
		name string
		body string
		n    int64
		want string
	}{
		{"short", "ok", 10, "ok"},
		{"exact", "abcd", 4, "abcd"},
		{"truncated", "abcdef", 4, "abcd"},
		{"zero", "abc", 0, ""},
		{"negative", "abc", -1, ""},
		{"NUL dropped", "a\x00b", 10, "ab"},
		{"invalid utf8", "a\xffb", 10, "a\uFFFDb"},
		{"rune cut at limit", "ab€", 4, "ab"},
		{"replacement would overflow", "\xff\xff\xffa\xffb\xffc", 5, "\uFFFDa"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCapped(mk(tc.body), tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if int64(len(got)) > max(tc.n, 0) || !utf8.ValidString(got) {
				t.Fatalf("excerpt %q breaks the cap or is invalid UTF-8", got)
			}
		})
	}
	if s, err := ReadCapped(nil, 10); s != "" || err != nil {
		t.Fatal("nil response")
	}

	// A read error is reported along with what was read.
	boom := errors.New("boom")
	r := &http.Response{Body: io.NopCloser(io.MultiReader(strings.NewReader("par"), errReader{boom}))}
	s, err := ReadCapped(r, 10)
	if s != "par" || !errors.Is(err, boom) {
		t.Fatalf("got %q, %v", s, err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestTimeoutIsNotBlocked(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	resp, err := New(Options{AllowPrivate: true, Timeout: 200 * time.Millisecond}).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("no timeout")
	}
	if IsBlocked(err) {
		t.Fatal("timeout classified as blocked")
	}
	if got := Describe(err); got != "timeout" {
		t.Fatalf("Describe = %q", got)
	}
}

func TestConnectionReuse(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("y", 10<<10)) // larger than the excerpt, within the drain
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c := New(Options{AllowPrivate: true})
	for range 5 {
		resp, err := c.Post(srv.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadCapped(resp, ExcerptLimit); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 sequential deliveries, want 1 (reuse)", n)
	}
}

func TestDescribeStripsURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Close() // nothing listens any more: connection refused
	_, err := New(Options{AllowPrivate: true}).Get(srv.URL + "/hook?token=s3cret")
	if err == nil {
		t.Fatal("expected an error")
	}
	if IsBlocked(err) {
		t.Fatal("connection refused classified as blocked")
	}
	if d := Describe(err); strings.Contains(d, "s3cret") || d == "" {
		t.Fatalf("Describe = %q", d)
	}
}
