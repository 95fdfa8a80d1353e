// Package textinput holds the one rule every text input obeys: it is valid
// UTF-8 and contains no NUL character. PostgreSQL refuses both in text
// columns (SQLSTATE 22021) while SQLite stores them, so the rule is checked
// where input enters (request validation, form handlers) to give the same
// 400 on both dialects instead of a 500 on one of them.
package textinput

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Message is the field message for a value that breaks the rule.
const Message = "must be valid UTF-8 text without NUL characters"

// Valid reports whether s is valid UTF-8 without NUL.
func Valid(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// BadValues returns, sorted, the names of the form or query fields whose
// name or any value breaks the rule. A bad name is reported as it is
// (escaped with %q by whoever shows it).
func BadValues(v url.Values) []string {
	var bad []string
	for k, vs := range v {
		if !Valid(k) || slices.ContainsFunc(vs, func(s string) bool { return !Valid(s) }) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

// nulEscape is how a JSON document spells NUL inside a string: raw control
// characters are not allowed there.
var nulEscape = []byte(`\u0000`)

// BadJSON returns the JSON pointers (as path segments) of the strings in
// the JSON document doc that break the rule; a member name that breaks it
// is reported at its object. It returns nil when every string is fine and
// also when doc is not JSON at all: parsing errors are the validator's to
// report.
func BadJSON(doc []byte) [][]string {
	valid := utf8.Valid(doc)
	if valid && !bytes.Contains(doc, nulEscape) {
		return nil // the common case: nothing to walk
	}
	if !valid {
		// encoding/json would silently turn invalid bytes into U+FFFD, so
		// mark them with the NUL escape first: they can only sit inside
		// strings (anywhere else the document is not JSON), where the walk
		// below then finds them.
		doc = markInvalid(doc)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	var bad [][]string
	walk(v, nil, &bad)
	return bad
}

func markInvalid(doc []byte) []byte {
	out := make([]byte, 0, len(doc)+16)
	for len(doc) > 0 {
		r, n := utf8.DecodeRune(doc)
		if r == utf8.RuneError && n == 1 {
			out = append(out, nulEscape...)
		} else {
			out = append(out, doc[:n]...)
		}
		doc = doc[n:]
	}
	return out
}

func walk(v any, path []string, bad *[][]string) {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			*bad = append(*bad, slices.Clone(path))
		}
	case []any:
		for i, e := range v {
			walk(e, append(path, strconv.Itoa(i)), bad)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		reported := false
		for _, k := range keys {
			if strings.IndexByte(k, 0) >= 0 {
				if !reported {
					*bad = append(*bad, slices.Clone(path))
					reported = true
				}
				continue
			}
			walk(v[k], append(path, k), bad)
		}
	}
}
