package console_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// On a phone a table wider than the screen scrolls sideways: every table of
// the console's and the account pages' templates sits in a labelled,
// focusable scroll region (so a keyboard reaches its hidden columns, and
// the stylesheet shows the hint), or is a table of stacked cards.
func TestEveryTableIsAReachableRegion(t *testing.T) {
	files, err := filepath.Glob("templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../oauth/templates/*.html")
	files = append(files, more...)
	table := regexp.MustCompile(`<table\b[^>]*>`)
	region := regexp.MustCompile(`<div class="table-wrap" role="region" (tabindex="0" aria-label="[^"]+"|aria-label="[^"]+" tabindex="0")><table\b`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tables := len(table.FindAllIndex(b, -1))
		regions := len(region.FindAllIndex(b, -1))
		n += tables
		if tables != regions {
			t.Errorf("%s: %d tables, %d in a labelled focusable region", f, tables, regions)
		}
	}
	if n < 10 {
		t.Fatalf("only %d tables found: the walk of the templates is broken", n)
	}
}
