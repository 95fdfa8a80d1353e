// Command gencounts writes what internal/counts/counted declares: the
// statements of what is counted (counts.gen.go) and the migration, one per
// dialect, that installs the triggers keeping the counters. Run by go
// generate in internal/counts; -root is the repository.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/finsvc/finsvc/internal/counts/counted"
)

func main() {
	root := flag.String("root", "../..", "the repository's root `dir`")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "gencounts:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	if err := counted.Check(counted.Lists); err != nil {
		return err
	}
	src, err := counted.GoFile(counted.Lists)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "internal/counts/counts.gen.go"), src, 0o644); err != nil {
		return err
	}
	for dialect, render := range map[string]func([]counted.List, string) string{
		"postgres": counted.Postgres, "sqlite": counted.SQLite,
	} {
		path := filepath.Join(root, "migrations", dialect, counted.Migration+".sql")
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		tail := counted.Split(string(old))
		if tail == "" {
			tail = counted.DownMarker + "\n-- TODO: the Up of the previous generation of this migration, which\n-- drops these triggers, creates its own and recounts.\n"
		}
		if err := os.WriteFile(path, []byte(render(counted.Lists, tail)), 0o644); err != nil {
			return err
		}
	}
	return nil
}
