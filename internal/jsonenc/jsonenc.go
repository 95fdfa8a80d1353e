// Package jsonenc appends JSON values byte for byte as encoding/json writes
// them, for the hot responses that are written without its reflection
// (internal/httpapi's GET /clients/{id}). encoding/json stays the reference: each
// writer built on these has a test holding it to json.Marshal's bytes.
package jsonenc

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// String appends s as a JSON string escaped as encoding/json escapes it by
// default: quote, backslash and control bytes (\b, \f, \n, \r and \t
// short), HTML's <, > and &, invalid UTF-8 as U+FFFD, and U+2028 and
// U+2029.
func String(b []byte, s string) []byte { return appendString(b, s, true) }

// Minimal appends s as log/slog's JSON handler escapes it, the least JSON
// allows plus U+2028 and U+2029: quote, backslash and control bytes (only
// \n, \r and \t short), invalid UTF-8 as U+FFFD; HTML characters stay as
// written. It is jsonlog's escaping and the canonical form of table values
// (internal/fieldtype), which are data, not HTML.
func Minimal(b []byte, s string) []byte { return appendString(b, s, false) }

// appendString is String (encodingJSON) or Minimal: the two differ in
// HTML's characters and in \b and \f.
func appendString(b []byte, s string, encodingJSON bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!encodingJSON || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b' && encodingJSON:
				b = append(b, '\\', 'b')
			case c == '\f' && encodingJSON:
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// Time appends t as time.Time's MarshalJSON writes it (RFC 3339 with
// nanoseconds, quoted). It reports false, with b unchanged, for a time
// MarshalJSON refuses (a year outside 0–9999, a zone offset of a day or
// more): the caller then takes encoding/json's path and its error.
func Time(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off <= -24*3600 || off >= 24*3600 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// Int appends n.
func Int(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
