package apitest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeExamples are the tested copies of the program examples of
// docs/clients.md (the README's "Generating a client" links there): CI
// compiles and runs each against a live demo (clients/go/smoke.sh,
// clients/typescript/smoke.sh), so the page must print them exactly.
var readmeExamples = map[string]string{
	"go": "clients/go/example/main.go",
	"ts": "clients/typescript/smoke/example.ts",
}

var fence = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```$")

// readmeBlocks returns the document's fenced code blocks of language lang.
func readmeBlocks(t *testing.T, readme, lang string) []string {
	t.Helper()
	var blocks []string
	for _, m := range fence.FindAllStringSubmatch(readme, -1) {
		if m[1] == lang {
			blocks = append(blocks, m[2])
		}
	}
	return blocks
}

// TestREADMEExamplesAreTested fails when a Go or TypeScript block of
// docs/clients.md is not, character for character, one of the files CI compiles and
// runs: every such block is a tested program, and editing one side only
// (the page or the tested copy) is caught here.
func TestREADMEExamplesAreTested(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.ReplaceAll(string(b), "\r\n", "\n")
	for lang, path := range readmeExamples {
		want, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		blocks := readmeBlocks(t, readme, lang)
		if len(blocks) != 1 {
			t.Errorf("docs/clients.md has %d ```%s blocks; want exactly one, the copy of %s (CI runs only that one)", len(blocks), lang, path)
			continue
		}
		if got := blocks[0]; got != string(want) {
			t.Errorf("docs/clients.md's ```%s block differs from %s, the copy CI compiles and runs; make them identical\n%s", lang, path, firstDiff(got, string(want)))
		}
	}
}

// firstDiff names the first line where the README block and the file part.
func firstDiff(readme, file string) string {
	a, b := strings.Split(readme, "\n"), strings.Split(file, "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  README: %s\n  file:   %s", i+1, x, y)
		}
	}
	return ""
}
