package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/finsvc/finsvc/internal/config"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/idempotency"
	"github.com/finsvc/finsvc/internal/keyring"
	"github.com/finsvc/finsvc/internal/mfa"
	"github.com/finsvc/finsvc/internal/sealing"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

func init() {
	const group = "rotate the service secret (the key ring)"
	registerSub("secret", group, &command{name: "status", synopsis: "show the key ring's ids and the sealed values per key id", run: runSecretStatus})
	registerSub("secret", group, &command{name: "reseal", synopsis: "re-seal every sealed value under the current secret, in batches", run: runSecretReseal})
}

// sealedColumns is every sealed column of the database, each declared by
// the package that owns its table.
func sealedColumns() []sealing.Column {
	return slices.Concat(registry.SealedColumns(), idempotency.SealedColumns(), mfa.SealedColumns())
}

// secretDB parses the flags of a secret subcommand, opens the database and
// resolves the key ring (a malformed ring is refused, as by serve).
func secretDB(ctx context.Context, c *cli, args []string, name, about string, extra func(fs *flag.FlagSet)) (*db.DB, *keyring.Ring, error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return nil, nil, err
	}
	fs := flagSet("secret " + name)
	cfg.RegisterFlagsOnly(fs, dbFlags...)
	if extra != nil {
		extra(fs)
	}
	usage := func(w io.Writer) { printFlags(w, fs, "finsvc secret "+name+" [flags]", about) }
	pos, err := parse(c, fs, args, usage)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) > 0 {
		return nil, nil, usagef("unexpected argument %q", pos[0])
	}
	if err := validate(cfg); err != nil {
		return nil, nil, err
	}
	d, err := openDB(ctx, cfg, c)
	if err != nil {
		return nil, nil, err
	}
	ring, err := resolveRing(cfg, d)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, ring, nil
}

func resolveRing(cfg *config.Config, d *db.DB) (*keyring.Ring, error) {
	if _, err := cfg.ResolveSecret(d.Dialect); err != nil {
		return nil, err
	}
	return cfg.Ring()
}

func runSecretStatus(ctx context.Context, c *cli, args []string) error {
	d, ring, err := secretDB(ctx, c, args, "status",
		"Prints the ids of the key ring (FINSVC_SECRET, FINSVC_SECRET_PREVIOUS,\nFINSVC_SECRET_REVOKED) and how many sealed values each key sealed, per column.\nA previous secret can leave the ring once it seals nothing (finsvc secret reseal).", nil)
	if err != nil {
		return err
	}
	defer d.Close()
	counts, err := sealing.Status(ctx, d.DB, sealedColumns())
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "key ring: %s\n\n", ring)
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COLUMN\tKEY\tVALUES")
	stale := int64(0)
	for _, n := range counts {
		label := n.KeyID
		switch k, ok := ring.Key(n.KeyID); {
		case n.KeyID == ring.Current().ID:
			label += " (current)"
		case n.KeyID == sealing.LegacyKeyID:
			label += " (before the key ring)"
		case !ok:
			label += " (NOT IN THE RING: these values cannot be opened)"
		case k.Revoked:
			label += " (revoked)"
		default:
			label += " (previous)"
		}
		if n.KeyID != ring.Current().ID {
			stale += n.N
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", n.Column, label, n.N)
	}
	tw.Flush()
	if stale > 0 {
		fmt.Fprintf(c.stdout, "\n%d sealed values are not under the current key: run finsvc secret reseal\n", stale)
	} else {
		fmt.Fprintln(c.stdout, "\nevery sealed value is under the current key")
	}
	return nil
}

func runSecretReseal(ctx context.Context, c *cli, args []string) error {
	batch := 500
	d, ring, err := secretDB(ctx, c, args, "reseal",
		"Re-seals every sealed value not under the current secret (webhook secrets and\ntheir previous secrets, stored idempotent responses, TOTP secrets) under the current one, in\nbatches, each committed on its own: safe to run while replicas serve, to\ninterrupt and to run again (it resumes). Every replica must already have the\ncurrent secret in its ring. Afterwards finsvc secret status shows 0 values under\nother keys, and the previous secrets can leave the ring.",
		func(fs *flag.FlagSet) { fs.IntVar(&batch, "batch", batch, "rows per transaction") })
	if err != nil {
		return err
	}
	defer d.Close()
	if batch <= 0 {
		return usagef("--batch must be positive")
	}
	fmt.Fprintf(c.stdout, "key ring: %s\n", ring)
	err = sealing.Reseal(ctx, d.DB, ring, sealedColumns(), batch, func(p sealing.Progress) {
		fmt.Fprintf(c.stdout, "%s: %d resealed", p.Column, p.Resealed)
		if p.Failed > 0 {
			fmt.Fprintf(c.stdout, ", %d did not open", p.Failed)
		}
		fmt.Fprintln(c.stdout)
	})
	if errors.Is(err, sealing.ErrNotResealed) {
		return fmt.Errorf("%w: they are sealed under a key that is not in the ring (see finsvc secret status); put it back in FINSVC_SECRET_PREVIOUS and run again", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "every sealed value is under the current key "+ring.Current().ID)
	return nil
}
