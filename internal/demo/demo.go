// Package demo seeds a demo tenant so that `finsvc demo` gives an integrator
// a working service in one command. Seeding is a list of small steps; each
// area adds its own (app, templates, clients, acts) by appending to steps.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/finsvc/finsvc/internal/acts"
	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/clients"
	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/users"
)

// Demo identities.
const (
	TenantSlug = "demo"
	TenantName = "Demo Org"
	AdminEmail = "admin@demo.localhost"
	AdminName  = "Demo Admin"
	// InfoFile is written into the data directory.
	InfoFile = "demo.json"
)

// Info is what an integrator needs to drive the demo, written to
// <data>/demo.json (the README's integration guide reads it).
type Info struct {
	BaseURL       string `json:"base_url"`
	Tenant        string `json:"tenant"`
	AdminEmail    string `json:"admin_email"`
	AdminPassword string `json:"admin_password"`
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	RedirectURI   string `json:"redirect_uri"`
}

// Stores are the stores the steps write through, built by the composition
// root (app.App.Services): the demo builds none of its own, so that its
// acts record events in the service's outbox and its admin gets the
// service's password hashing.
type Stores struct {
	Users     *users.Store
	Clients   *clients.Store
	Templates *templates.Store
	Acts      *acts.Store
}

// Seeder carries state between seeding steps.
type Seeder struct {
	DB     *db.DB
	Stores Stores
	Config *config.Config
	Info   *Info
	Tenant *tenant.Tenant
	Admin  *users.User
	// Ctx carries the demo tenant once seedTenant has run, so that later
	// steps can use tenant-scoped stores directly.
	Ctx context.Context
	// Templates ("Credit review", "KYC check") and Clients (five) are set
	// by seedTemplates and seedClients, for the steps that seed acts.
	Templates []*templates.Template
	Clients   []*clients.Client
}

// Step is one seeding step. Steps must be idempotent: `finsvc demo --data
// DIR` run twice seeds the same directory again.
type Step func(s *Seeder) error

// steps run in order. Append new steps (after seedAdmin) for apps,
// templates, clients and acts.
var steps = []Step{
	seedTenant,
	seedAdmin,
	seedApp,
	seedTemplates,
	seedClients,
	seedActs,
}

// Seed creates (or refreshes) the demo tenant and its data in d, through
// st, and returns the connection details. cfg.Addr should be the bound
// address, so that BaseURL carries the real port.
func Seed(ctx context.Context, d *db.DB, cfg *config.Config, st Stores) (*Info, error) {
	if st.Users == nil || st.Clients == nil || st.Templates == nil || st.Acts == nil {
		return nil, fmt.Errorf("demo: every store is required (internal/app builds them)")
	}
	base, err := BaseURL(cfg, TenantSlug)
	if err != nil {
		return nil, err
	}
	s := &Seeder{DB: d, Stores: st, Config: cfg, Ctx: ctx, Info: &Info{BaseURL: base, Tenant: TenantSlug}}
	for _, step := range steps {
		if err := step(s); err != nil {
			return nil, fmt.Errorf("demo: seed: %w", err)
		}
	}
	return s.Info, nil
}

func seedTenant(s *Seeder) error {
	st := tenant.NewStore(s.DB, tenant.WithCacheTTL(0))
	t, err := st.Create(s.Ctx, TenantSlug, TenantName)
	if apperr.Is(err, apperr.Conflict) {
		t, err = st.BySlug(s.Ctx, TenantSlug)
	}
	if err != nil {
		return fmt.Errorf("tenant: %w", err)
	}
	s.Tenant = t
	s.Ctx = tenant.NewContext(s.Ctx, t)
	return nil
}

// seedAdmin creates the admin, or on a re-run gives it a fresh password:
// only a hash is stored, and the password must be printed again.
func seedAdmin(s *Seeder) error {
	st := s.Stores.Users
	password := users.GeneratePassword()
	u, err := st.Create(s.Ctx, AdminEmail, AdminName, auth.RoleAdmin, password)
	if apperr.Is(err, apperr.Conflict) {
		if u, err = st.ByEmail(s.Ctx, AdminEmail); err == nil {
			err = st.SetPassword(s.Ctx, u.ID, password)
		}
	}
	if err != nil {
		return fmt.Errorf("admin user: %w", err)
	}
	s.Admin = u
	s.Info.AdminEmail = AdminEmail
	s.Info.AdminPassword = password
	return nil
}

// BaseURL is the tenant's URL for cfg: scheme by TLS, host
// <slug>.<base-domain>, and the port of cfg.Addr (omitted when it is the
// scheme's default).
func BaseURL(cfg *config.Config, slug string) (string, error) {
	_, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return "", fmt.Errorf("demo: address %q: %w", cfg.Addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 {
		return "", fmt.Errorf("demo: address %q has no bound port", cfg.Addr)
	}
	scheme := "http"
	if cfg.TLS() {
		scheme = "https"
	}
	host := slug + "." + cfg.BaseDomain
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host, nil
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// Write stores info as <dir>/demo.json, readable by the owner only: it
// holds the admin password and the app's client secret.
func (i *Info) Write(dir string) (string, error) {
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, InfoFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("demo: write %s: %w", path, err)
	}
	// Rename so that a script polling for demo.json never reads half a file.
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("demo: write %s: %w", path, err)
	}
	return path, nil
}

// Print writes the human instructions: where the service is, how to log in,
// and a curl line that works without DNS for *.localhost.
func (i *Info) Print(w io.Writer, listenAddr, infoPath string) {
	fmt.Fprintf(w, "finsvc demo is running\n\n")
	fmt.Fprintf(w, "  base URL:        %s\n", i.BaseURL)
	fmt.Fprintf(w, "  tenant:          %s\n", i.Tenant)
	fmt.Fprintf(w, "  admin email:     %s\n", i.AdminEmail)
	fmt.Fprintf(w, "  admin password:  %s\n", i.AdminPassword)
	if i.ClientID != "" {
		fmt.Fprintf(w, "  client id:       %s\n", i.ClientID)
		fmt.Fprintf(w, "  client secret:   %s\n", i.ClientSecret)
		fmt.Fprintf(w, "  redirect URI:    %s\n", i.RedirectURI)
	}
	fmt.Fprintf(w, "  details (JSON):  %s\n\n", infoPath)
	fmt.Fprintf(w, "Log in at %s/login with the admin email and password.\n", i.BaseURL)
	fmt.Fprintf(w, "Check it from a shell:\n\n  %s\n\n", CurlLine(i, listenAddr))
}

// CurlLine is a health-check command against the listener, addressing the
// tenant through the Host header.
func CurlLine(i *Info, listenAddr string) string {
	host, port, _ := net.SplitHostPort(listenAddr)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme, hostHeader, insecure := "http", i.Tenant, ""
	if u, err := url.Parse(i.BaseURL); err == nil && u.Host != "" {
		scheme, hostHeader = u.Scheme, u.Hostname()
	}
	if scheme == "https" {
		insecure = "-k " // the certificate names the tenant host, not the IP
	}
	return fmt.Sprintf("curl %s-H 'Host: %s' %s://%s/healthz", insecure, hostHeader, scheme, net.JoinHostPort(host, port))
}
