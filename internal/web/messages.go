package web

import (
	"errors"
	"sort"
	"strings"

	"github.com/finsvc/finsvc/internal/apperr"
)

// Messages: every page says what went wrong in sentences, one per refusal
// and one per refused field, and the refusal of a role reads the same on
// every page (Forbidden).

// Sentence capitalises m and ends it with a full stop.
func Sentence(m string) string {
	m = strings.TrimSpace(m)
	if m == "" {
		return m
	}
	m = strings.ToUpper(m[:1]) + m[1:]
	if !strings.HasSuffix(m, ".") && !strings.HasSuffix(m, "?") && !strings.HasSuffix(m, "!") {
		m += "."
	}
	return m
}

// FieldSentence is one field's refusal as a sentence naming the field by
// label: ("Email", "is already registered") → "Email is already registered."
// A message that already names its subject ("Choose a template") stands
// alone.
func FieldSentence(label, msg string) string {
	msg = strings.TrimSpace(msg)
	for _, verb := range []string{"is ", "must ", "are ", "was ", "has ", "cannot ", "may ", "should ", "does "} {
		if strings.HasPrefix(msg, verb) {
			return Sentence(label + " " + msg)
		}
	}
	return Sentence(msg)
}

// Label is a field name as people read it: "redirect_uris" → "Redirect uris".
func Label(field string) string {
	s := strings.ReplaceAll(field, "_", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Describe is a refusal as sentences for a banner: the refusal's own
// message, then one sentence per field message (fields in name order).
// Pages that show field messages beside their fields use FieldErrors and
// only the refusal's message.
func Describe(err error) string { return DescribeLabelled(err, nil) }

// DescribeLabelled is Describe naming the fields by labels (a field
// without one by its name).
func DescribeLabelled(err error, labels map[string]string) string {
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		return Sentence(err.Error())
	}
	parts := []string{}
	if m := Sentence(ae.Message); m != "" {
		parts = append(parts, m)
	}
	names := make([]string, 0, len(ae.Fields))
	for f := range ae.Fields {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		l, ok := labels[f]
		if !ok {
			l = Label(f)
		}
		for _, m := range ae.Fields[f] {
			parts = append(parts, FieldSentence(l, m))
		}
	}
	return strings.Join(parts, " ")
}

// FieldErrors is one sentence per refused field of err (its first
// message), labelled by labels (a field without one by its name), for the
// page to show beside each field; nil when err names no field.
func FieldErrors(err error, labels map[string]string) map[string]string {
	var ae *apperr.Error
	if !errors.As(err, &ae) || len(ae.Fields) == 0 {
		return nil
	}
	out := map[string]string{}
	for f, msgs := range ae.Fields {
		if len(msgs) == 0 {
			continue
		}
		l, ok := labels[f]
		if !ok {
			l = Label(f)
		}
		out[f] = FieldSentence(l, msgs[0])
	}
	return out
}

// ForbiddenTitle is the title of the page that refuses a role, on every
// page (console, developer and account pages).
const ForbiddenTitle = "Not allowed"

// Forbidden is the error page's data for a refused role: the policy's
// words for the refusal (x-finsvc-forbidden), as a sentence.
func Forbidden(err error) Layout {
	msg := "Your role does not allow this."
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Message != "" {
		msg = Sentence(ae.Message)
	}
	return Layout{Title: ForbiddenTitle, Message: msg}
}
