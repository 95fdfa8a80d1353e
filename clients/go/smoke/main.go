// Command smoke is what an integrator's first program with the Go client
// does, against a live `finsvc demo`: the authorization-code flow with PKCE
// through golang.org/x/oauth2 (signing in and allowing on the server's own
// pages), then API calls through finsvc.New, a refresh through the token
// source, and a 404 in the error format; it leaves the last tokens in
// ./tokens.json. smoke.sh builds it in a scratch module outside the
// repository that requires only the client module.
//
//	go run . <path to demo.json>
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/clients/go/finsvc"
)

type demo struct {
	BaseURL       string `json:"base_url"`
	Tenant        string `json:"tenant"`
	AdminEmail    string `json:"admin_email"`
	AdminPassword string `json:"admin_password"`
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	RedirectURI   string `json:"redirect_uri"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: smoke <demo.json>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "go client smoke failed:", err)
		os.Exit(1)
	}
	fmt.Println("go client smoke: 5 passed, 0 failed")
}

func run(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var d demo
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, finsvc.LocalhostClient())
	conf := &oauth2.Config{
		ClientID: d.ClientID, ClientSecret: d.ClientSecret, RedirectURL: d.RedirectURI,
		Scopes: []string{"clients:read", "acts:read"},
		Endpoint: oauth2.Endpoint{
			AuthURL: d.BaseURL + "/oauth/authorize", TokenURL: d.BaseURL + "/api/oauth/token",
			AuthStyle: oauth2.AuthStyleInHeader,
		},
	}
	verifier := oauth2.GenerateVerifier()
	state := random()
	code, err := authorize(d, conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), state)
	if err != nil {
		return fmt.Errorf("authorize: %w", err)
	}
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return fmt.Errorf("exchange: %w", err)
	}
	fmt.Println("token: issued, scope", tok.Extra("scope"))

	c, err := finsvc.New(d.BaseURL, d.Tenant, conf.TokenSource(ctx, tok))
	if err != nil {
		return err
	}
	me, err := c.GetMeWithResponse(ctx)
	if err != nil || me.JSON200 == nil {
		return fmt.Errorf("GET /me: %v %s", err, body(me))
	}
	if string(me.JSON200.Organization) != d.Tenant {
		return fmt.Errorf("me.organization = %q, want %q", me.JSON200.Organization, d.Tenant)
	}
	fmt.Printf("me: %s (%s) in %s\n", me.JSON200.Email, me.JSON200.Role, me.JSON200.Organization)

	page, limit := 1, 5
	list, err := c.ListClientsWithResponse(ctx, &finsvc.ListClientsParams{Page: &page, Limit: &limit})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Data) == 0 {
		return fmt.Errorf("GET /clients: %v %s", err, body(list))
	}
	first := list.JSON200.Data[0]
	if _, err := first.CreditLimit.Float64(); err != nil {
		return fmt.Errorf("credit_limit %q is not a number", first.CreditLimit)
	}
	fmt.Printf("clients: %d of %d, first %s (credit limit %s)\n", len(list.JSON200.Data), list.JSON200.Meta.Total, first.CompanyName, first.CreditLimit)

	missing, err := c.GetClientWithResponse(ctx, 999999)
	if err != nil || missing.StatusCode() != http.StatusNotFound || missing.JSON404 == nil || missing.JSON404.Message == "" {
		return fmt.Errorf("a missing client: %v %s", err, body(missing))
	}
	fmt.Println("missing client: 404 in the error format")

	// An expired token makes the token source refresh (rotating the
	// refresh token) before the next call.
	tok.Expiry = time.Now().Add(-time.Hour)
	ts := conf.TokenSource(ctx, tok)
	c, err = finsvc.New(d.BaseURL, d.Tenant, ts)
	if err != nil {
		return err
	}
	if me, err := c.GetMeWithResponse(ctx); err != nil || me.JSON200 == nil {
		return fmt.Errorf("GET /me after a refresh: %v %s", err, body(me))
	}
	fresh, err := ts.Token()
	if err != nil || fresh.RefreshToken == tok.RefreshToken || fresh.AccessToken == tok.AccessToken {
		return fmt.Errorf("refresh did not rotate the tokens: %v", err)
	}
	fmt.Println("refresh: rotated")
	// Leave the tokens where the README's steps do, for example/main.go,
	// which smoke.sh runs next.
	b, err = json.Marshal(fresh)
	if err != nil {
		return err
	}
	return os.WriteFile("tokens.json", b, 0o600)
}

func body(r interface{ StatusCode() int }) string {
	if r == nil {
		return ""
	}
	return fmt.Sprint("status ", r.StatusCode())
}

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

var (
	formRE  = regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form>`)
	inputRE = regexp.MustCompile(`(?is)<(input|button)\b([^>]*)>`)
)

func attr(tag, name string) (string, bool) {
	m := regexp.MustCompile(`(?i)\b` + name + `\s*=\s*"([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return "", false
	}
	return html.UnescapeString(m[1]), true
}

// authorize plays the user in a browser: it follows the authorization URL,
// signs in on the login page, allows on the consent page, and returns the
// code the redirect URI receives (checking state).
func authorize(d demo, authURL, state string) (string, error) {
	jar, _ := cookiejar.New(nil)
	hc := finsvc.LocalhostClient()
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	next := authURL
	var resp *http.Response
	var err error
	resp, err = hc.Get(next)
	for hop := 0; hop < 10; hop++ {
		if err != nil {
			return "", err
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusFound || resp.StatusCode == http.StatusSeeOther {
			loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
			if err != nil {
				return "", err
			}
			if strings.HasPrefix(loc.String(), d.RedirectURI) {
				q := loc.Query()
				if q.Get("state") != state || q.Get("error") != "" || q.Get("code") == "" {
					return "", fmt.Errorf("redirected to %s", loc.Redacted())
				}
				return q.Get("code"), nil
			}
			resp, err = hc.Get(loc.String())
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %d", resp.Request.URL.Path, resp.StatusCode)
		}
		action, fields, err := pickForm(string(page))
		if err != nil {
			return "", err
		}
		if _, ok := fields["password"]; ok {
			for k := range fields {
				switch {
				case strings.Contains(k, "email"), strings.Contains(k, "user"):
					fields.Set(k, d.AdminEmail)
				case strings.Contains(k, "pass"):
					fields.Set(k, d.AdminPassword)
				}
			}
		} else {
			fields.Set("decision", "allow")
		}
		target, err := resp.Request.URL.Parse(action)
		if err != nil {
			return "", err
		}
		resp, err = hc.PostForm(target.String(), fields)
	}
	return "", errors.New("too many steps in the authorization flow")
}

// pickForm returns the login form, or else the consent form (the one with
// the decision), with its fields' values.
func pickForm(page string) (string, url.Values, error) {
	var chosen []string
	for _, f := range formRE.FindAllStringSubmatch(page, -1) {
		if strings.Contains(f[2], `type="password"`) || strings.Contains(f[2], `name="decision"`) || strings.Contains(f[2], `value="allow"`) {
			chosen = f
			break
		}
	}
	if chosen == nil {
		return "", nil, fmt.Errorf("no login or consent form in the page: %.300s", page)
	}
	fields := url.Values{}
	for _, in := range inputRE.FindAllStringSubmatch(chosen[2], -1) {
		name, ok := attr(in[2], "name")
		typ, _ := attr(in[2], "type")
		if !ok || strings.EqualFold(in[1], "button") || strings.EqualFold(typ, "submit") {
			continue
		}
		v, _ := attr(in[2], "value")
		fields.Set(name, v)
	}
	action, _ := attr(chosen[1], "action")
	return action, fields, nil
}
