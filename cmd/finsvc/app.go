package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/finsvc/finsvc/pkg/auth"
	"github.com/finsvc/finsvc/pkg/oauth"
)

func init() {
	registerSub("app", "manage OAuth apps", &command{name: "create",
		synopsis: "register an OAuth app: app create --tenant T --name N --redirect-uri U", run: runAppCreate})
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
