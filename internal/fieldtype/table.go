package fieldtype

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/finsvc/finsvc/internal/jsonenc"
)

var reasonTableTooLarge = "must be at most " + strconv.Itoa(MaxTableBytes) + " bytes long"

// normalizeTable checks a table value and returns its canonical JSON. It
// walks the JSON with the token API rather than unmarshalling into maps,
// because maps would silently merge duplicate keys and lose key order, and
// numbers must be read from their literal text.
func (s *spec) normalizeTable(v string) (string, error) {
	fail := func(path, reason string) (string, error) {
		return "", &ValueError{Type: Table, Path: path, Reason: reason}
	}
	if len(v) > MaxTableBytes {
		return fail("", reasonTableTooLarge)
	}
	// encoding/json would replace invalid UTF-8 with U+FFFD, changing the
	// value behind the sender's back.
	if !utf8.ValidString(v) {
		return fail("", "must be valid UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	const notArray = "must be a JSON array of row objects, such as [] or [{\"key\": \"value\"}]"
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return fail("", notArray)
	}

	index := make(map[string]int, len(s.columns))
	for i, c := range s.columns {
		index[c.key] = i
	}
	// One row's cells, reused across rows: seen marks keys present (a
	// null included), filled marks cells that hold a value.
	cells := make([]string, len(s.columns))
	filled := make([]bool, len(s.columns))
	seen := make([]bool, len(s.columns))
	var b strings.Builder
	b.Grow(len(v) + len(v)/4)
	b.WriteByte('[')
	rows := 0
	for dec.More() {
		// Paths are built only on failure: allocating one per cell would
		// dominate the cost of a valid table.
		path := func() string { return "[" + strconv.Itoa(rows) + "]" }
		if rows == MaxTableRows {
			return fail("", "must have at most "+strconv.Itoa(MaxTableRows)+" rows")
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return fail(path(), "must be a JSON object mapping column keys to cells")
		}
		clear(filled)
		clear(seen)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fail(path(), syntaxReason(err))
			}
			key, _ := tok.(string) // in key position the decoder yields only strings
			i, ok := index[key]
			if !ok {
				return fail(path(), "has unknown column "+quoteExcerpt(key))
			}
			if seen[i] {
				return fail(path()+"."+key, "appears twice in the row")
			}
			seen[i] = true
			tok, err = dec.Token()
			if err != nil {
				return fail(path()+"."+key, syntaxReason(err))
			}
			cell, ok, reason := s.columns[i].spec.normalizeCell(tok)
			if reason != "" {
				return "", &ValueError{Type: s.columns[i].spec.typ, Path: path() + "." + key, Reason: reason}
			}
			cells[i], filled[i] = cell, ok
		}
		if _, err := dec.Token(); err != nil { // the closing '}'
			return fail(path(), syntaxReason(err))
		}
		if rows > 0 {
			b.WriteByte(',')
		}
		writeRow(&b, s.columns, cells, filled)
		rows++
		if b.Len() > MaxTableBytes {
			return fail("", reasonTableTooLarge+" once normalized (every row lists every column)")
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return fail("", syntaxReason(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("", "must contain nothing after the closing ]")
	}
	b.WriteByte(']')
	if b.Len() > MaxTableBytes {
		return fail("", reasonTableTooLarge+" once normalized (every row lists every column)")
	}
	return b.String(), nil
}

// quoteExcerpt quotes s for an error message, shortened so that a hostile
// value cannot make the message (and the response carrying it) huge.
func quoteExcerpt(s string) string {
	const maxRunes = 40
	if utf8.RuneCountInString(s) <= maxRunes {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:maxRunes])) + "…"
}

// writeRow writes one row in canonical form: every column, in column order,
// null for an empty cell (one whose filled flag is false).
func writeRow(b *strings.Builder, cols []column, cells []string, filled []bool) {
	b.WriteByte('{')
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(c.key) // keys are [a-z0-9_], nothing to escape
		b.WriteString(`":`)
		if filled[i] {
			appendJSONString(b, cells[i])
		} else {
			b.WriteString("null")
		}
	}
	b.WriteByte('}')
}

// normalizeCell normalizes one table cell token. ok is false for an empty
// cell (JSON null); reason is non-empty for an invalid one.
func (s *spec) normalizeCell(tok json.Token) (c string, ok bool, reason string) {
	const wantString = "must be a JSON string (or null)"
	var raw string
	switch t := tok.(type) {
	case nil:
		return "", false, ""
	case string:
		if t == "" && s.typ != Text {
			return "", false, `must not be ""; use null for an empty cell`
		}
		raw = t
	case json.Number:
		switch s.typ {
		case Number, Integer, Currency, Percentage:
			raw = string(t) // the literal text, so 1e3 stays invalid and 0.1 stays exact
		default:
			return "", false, wantString
		}
	case bool:
		if s.typ != Boolean {
			return "", false, wantString
		}
		raw = strconv.FormatBool(t)
	case json.Delim:
		return "", false, "must be a single value, not a JSON object or array"
	default:
		return "", false, wantString
	}
	if c, reason = s.normalizeScalar(raw); reason != "" {
		return "", false, reason
	}
	return c, true, ""
}

// syntaxReason turns a decoder error into a message. The decoder's own
// message includes an offset, which is useful to the sender.
func syntaxReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "is not valid JSON (" + se.Error() + ")"
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return "is not valid JSON (unexpected end of input)"
	}
	return "is not valid JSON"
}

// appendJSONString writes s as a JSON string with minimal, deterministic
// escaping (jsonenc.Minimal). Unlike encoding/json it does not escape <, >
// and &: the value is data, not HTML, and the canonical form should read as
// written. Cells are valid UTF-8 (checked on entry).
func appendJSONString(b *strings.Builder, s string) {
	var buf [128]byte
	b.Write(jsonenc.Minimal(buf[:0], s))
}
