package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/tenant"
)

func init() {
	registerSub("app", "manage OAuth apps", &command{name: "create",
		synopsis: "register an OAuth app: app create --tenant T --name N --redirect-uri U", run: runAppCreate})
	registerSub("app", "manage OAuth apps", &command{name: "rotate",
		synopsis: "give an app a new client secret: app rotate --tenant T --app ID [--overlap 24h]", run: runAppRotate})
	registerSub("app", "manage OAuth apps", &command{name: "end-overlap",
		synopsis: "make an app's previous secret stop working now: app end-overlap --tenant T --app ID", run: runAppEndOverlap})
}

func runAppRotate(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("app rotate")
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	slug := fs.String("tenant", "", "tenant `slug` (required)")
	id := fs.String("app", "", "the app's client `id` (required)")
	overlap := fs.String("overlap", "24h", "how long the current secret keeps working: a `duration` up to 720h, or now")
	asJSON := fs.Bool("json", false, "print {client_id, client_secret, previous_secret_expires_at} as JSON")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc app rotate --tenant T --app ID [--overlap 24h] [--json]",
			"Gives an app a new client secret and prints it (only this once; it is stored\nas a SHA-256 digest). The secret it replaces keeps working for --overlap, so\nthat running integrations can switch without an outage; --overlap now stops\nit at once (a leaked secret). 'finsvc app end-overlap' ends the window early.")
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *slug == "" {
		return usagef("--tenant is required")
	}
	if *id == "" {
		return usagef("--app is required")
	}
	window, err := oauth.ParseOverlap(*overlap)
	if err != nil {
		return usagef("--overlap %q: must be now or a duration up to 720h, such as 24h", *overlap)
	}
	if err := validate(cfg); err != nil {
		return err
	}
	d, t, err := openTenantDB(ctx, cfg, c, *slug)
	if err != nil {
		return err
	}
	defer d.Close()
	secret, until, err := oauth.RotateSecret(tenant.NewContext(ctx, t), d, audit.SystemActor, *id, window)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(c.stdout).Encode(struct {
			ClientID                string     `json:"client_id"`
			ClientSecret            string     `json:"client_secret"`
			PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
		}{*id, secret, until})
	}
	fmt.Fprintf(c.stdout, "rotated the secret of app %s in tenant %s\nclient secret: %s\n(the secret is shown only once)\n", *id, t.Slug, secret)
	if until != nil {
		fmt.Fprintf(c.stdout, "the previous secret keeps working until %s\n", until.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(c.stdout, "the previous secret no longer works\n")
	}
	return nil
}

func runAppEndOverlap(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("app end-overlap")
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	slug := fs.String("tenant", "", "tenant `slug` (required)")
	id := fs.String("app", "", "the app's client `id` (required)")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc app end-overlap --tenant T --app ID",
			"Makes the secret that the app's last rotation replaced stop working now,\ninstead of at the end of the rotation's window.")
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *slug == "" {
		return usagef("--tenant is required")
	}
	if *id == "" {
		return usagef("--app is required")
	}
	if err := validate(cfg); err != nil {
		return err
	}
	d, t, err := openTenantDB(ctx, cfg, c, *slug)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := oauth.EndSecretOverlap(tenant.NewContext(ctx, t), d, audit.SystemActor, *id); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "the previous secret of app %s no longer works\n", *id)
	return nil
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runAppCreate(ctx context.Context, c *cli, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	fs := flagSet("app create")
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	slug := fs.String("tenant", "", "tenant `slug` (required)")
	name := fs.String("name", "", "app name shown on the consent page (required)")
	var uris stringList
	fs.Var(&uris, "redirect-uri", "registered redirect `URI` (required; repeat for several)")
	scopes := fs.String("scopes", "", "space- or comma-separated scopes (default: all: "+strings.Join(auth.AllScopes, " ")+")")
	asJSON := fs.Bool("json", false, "print {client_id, client_secret} as JSON")
	usage := func(w io.Writer) {
		printFlags(w, fs, "finsvc app create --tenant T --name N --redirect-uri U [--scopes S] [--json]",
			"Registers an OAuth app (as /developer/my-apps does) and prints its client id\nand secret. The secret is stored only as a SHA-256 digest: this is the only\ntime it is shown.")
	}
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *slug == "" {
		return usagef("--tenant is required")
	}
	if *name == "" {
		return usagef("--name is required")
	}
	if len(uris) == 0 {
		return usagef("--redirect-uri is required")
	}
	if err := validate(cfg); err != nil {
		return err
	}
	d, t, err := openTenantDB(ctx, cfg, c, *slug)
	if err != nil {
		return err
	}
	defer d.Close()
	id, secret, err := oauth.CreateApp(ctx, d, t.ID, *name, uris, strings.Fields(strings.ReplaceAll(*scopes, ",", " ")))
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(c.stdout).Encode(struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
		}{id, secret})
	}
	fmt.Fprintf(c.stdout, "created app %q in tenant %s\nclient id:     %s\nclient secret: %s\n(the secret is shown only once)\n", strings.TrimSpace(*name), t.Slug, id, secret)
	return nil
}
