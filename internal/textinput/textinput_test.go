package textinput_test

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/finsvc/finsvc/internal/textinput"
)

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "plain": true, "Åse 北京 🙂": true, "tab\tand\nnewline": true,
		"a\x00b": false, "\x00": false, "bad \xff byte": false, "cut \xe2\x82": false, "\xed\xa0\x80": false, // a surrogate
	} {
		if got := textinput.Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestBadValues(t *testing.T) {
	v := url.Values{"ok": {"fine"}, "nul": {"fine", "a\x00"}, "utf8": {"\xc3"}, "k\x00": {"x"}}
	got := textinput.BadValues(v)
	want := []string{"k\x00", "nul", "utf8"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("BadValues = %q, want %q", got, want)
	}
	if got := textinput.BadValues(url.Values{"a": {"b"}}); got != nil {
		t.Fatalf("BadValues of clean values = %q", got)
	}
}

func TestBadJSON(t *testing.T) {
	cases := []struct {
		doc  string
		want [][]string
	}{
		{`{"title":"Q1"}`, nil},
		{`{"title":"a\u0000b"}`, [][]string{{"title"}}},
		{`{"title":"a\\u0000b"}`, nil}, // an escaped backslash, then text
		{`{"data":[{"value":1},{"error":"x\u0000"}]}`, [][]string{{"data", "1", "error"}}},
		{"{\"title\":\"bad \xff\"}", [][]string{{"title"}}},
		{"{\"a\":\"\xc3\",\"b\":{\"c\":[\"\xff\",\"ok\"]}}", [][]string{{"a"}, {"b", "c", "0"}}},
		{`{"k\u0000":1,"k\u0000\u0000":2,"ok":"\u0000"}`, [][]string{nil, {"ok"}}},
		{`"\u0000"`, [][]string{nil}},
		{`{"title":`, nil}, // not JSON: the validator reports it
		{"\xff", nil},
	}
	for _, c := range cases {
		if got := textinput.BadJSON([]byte(c.doc)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("BadJSON(%q) = %q, want %q", c.doc, got, c.want)
		}
	}
}
