package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// TestBrowserEndToEnd drives headless Chromium through the real server:
// authorize → login page → consent → Allow → code at a loopback callback,
// then golang.org/x/oauth2 exchanges the code (PKCE S256, Basic auth) and
// calls /api/1.0/me with the access token.
func TestBrowserEndToEnd(t *testing.T) {
	browsertest.Chromium(t) // skips without Chromium before the server starts
	s := newServer(t, serverOpt{})
	te := s.Tenant("acme")
	email := "admin@acme.example.com"
	if _, err := s.svcUsers().Create(te.Ctx, email, "Acme Admin", "admin", testPassword); err != nil {
		t.Fatal(err)
	}

	type result struct{ code, state, err string }
	got := make(chan result, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		select {
		case got <- result{q.Get("code"), q.Get("state"), q.Get("error")}:
		default:
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>done</title><link rel=icon href=\"data:,\"><p id=done>Signed in.</p>"))
	}))
	defer cb.Close()
	redirect := cb.URL + "/callback"
	clientID, secret, err := oauth.CreateApp(context.Background(), s.DB, te.Tenant.ID, "Browser Test App", []string{redirect},
		[]string{"clients:read", "acts:read"})
	if err != nil {
		t.Fatal(err)
	}

	srv, _ := url.Parse(s.Server.URL)
	base := "http://acme.localhost:" + srv.Port()
	conf := &oauth2.Config{
		ClientID: clientID, ClientSecret: secret, RedirectURL: redirect,
		Scopes: []string{"clients:read", "acts:read"},
		Endpoint: oauth2.Endpoint{
			AuthURL:   base + "/oauth/authorize",
			TokenURL:  s.Server.URL + "/api/oauth/token",
			AuthStyle: oauth2.AuthStyleInHeader,
		},
	}
	verifier := oauth2.GenerateVerifier()
	state := "browser-state-" + randHex(8)
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))

	// The shared browser also fails the test on console errors and failed
	// loads of the sign-in and consent pages.
	bctx := browsertest.New(t, browsertest.Options{Timeout: 90 * time.Second}).Ctx

	err = chromedp.Do(bctx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.SendKeys(chromedp.ID("password"), testPassword),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("allow")),
	)
	if err != nil {
		t.Fatalf("browser: login: %v", err)
	}
	consentText, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatalf("browser: consent text: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.ID("allow")), chromedp.WaitVisible(chromedp.ID("done"))); err != nil {
		t.Fatalf("browser: allow: %v", err)
	}
	if !strings.Contains(consentText, "Browser Test App") || !strings.Contains(consentText, "clients:read") {
		t.Fatalf("consent page does not name the app and scopes: %q", consentText)
	}
	var res result
	select {
	case res = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the callback never received the redirect")
	}
	if res.err != "" || res.code == "" || res.state != state {
		t.Fatalf("callback got %+v, want a code and state %q", res, state)
	}

	// x/oauth2 talks to the tenant host through the validating transport.
	hc := &http.Client{Transport: &apitest.ValidatingTransport{T: t, Host: te.Host}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	tok, err := conf.Exchange(ctx, res.code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.Expiry.IsZero() {
		t.Fatalf("token: %+v", tok)
	}
	resp, err := conf.Client(ctx, tok).Get(s.Server.URL + "/api/1.0/me")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var me map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&me); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/me: %d %v", resp.StatusCode, err)
	}
	if me["email"] != email || me["organization"] != "acme" || me["role"] != "admin" {
		t.Fatalf("/me = %v", me)
	}
	// And the refresh token works through x/oauth2 too.
	tok.Expiry = time.Now().Add(-time.Minute)
	fresh, err := conf.TokenSource(ctx, tok).Token()
	if err != nil || fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh via x/oauth2: %v", err)
	}
}
