// Command compat is the CI gate against breaking changes to the published
// contract (package compat): it compares openapi/finsvc.yaml with the newest
// spec in openapi/released/ and exits 1 on an unaccepted breaking change.
//
//	go run ./openapi/compat/cmd/compat [-released DIR] [-current FILE]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/finsvc/finsvc/openapi/compat"
)

func main() {
	dir := flag.String("released", "openapi/released", "directory of released specs (finsvc-<version>.yaml)")
	current := flag.String("current", "openapi/finsvc.yaml", "the spec being changed")
	flag.Parse()
	if err := run(*dir, *current); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func run(dir, current string) error {
	base, err := compat.Newest(dir)
	if err != nil {
		return err
	}
	released, err := os.ReadFile(base)
	if err != nil {
		return err
	}
	cur, err := os.ReadFile(current)
	if err != nil {
		return err
	}
	r, err := compat.Check(released, cur)
	if err != nil {
		return err
	}
	fmt.Printf("%s vs %s\n%s", base, current, r.Report())
	if !r.OK() {
		return fmt.Errorf("%d breaking change(s) against %s", len(r.Breaking), base)
	}
	return nil
}
