package page_test

import (
	"testing"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/page"
)

func ip(v int) *int { return &v }

func TestNew(t *testing.T) {
	r, err := page.New(nil, nil)
	if err != nil || r != (page.Request{Page: 1, Limit: 25}) || r.Offset() != 0 {
		t.Fatalf("defaults: %+v %v", r, err)
	}
	r, err = page.New(ip(3), ip(100))
	if err != nil || r.Offset() != 200 {
		t.Fatalf("page 3: %+v %v", r, err)
	}
	if r.Beyond(201) || !r.Beyond(200) || !r.Beyond(0) {
		t.Fatal("Beyond wrong at the edges")
	}
	for _, c := range []struct {
		p, l  int
		field string
	}{{0, 10, "page"}, {page.MaxPage + 1, 10, "page"}, {1, 0, "limit"}, {1, 101, "limit"}} {
		_, err := page.New(ip(c.p), ip(c.l))
		var e *apperr.Error
		if !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("%+v: %v", c, err)
		}
		e = err.(*apperr.Error)
		if len(e.Fields[c.field]) == 0 {
			t.Fatalf("%+v: fields %v", c, e.Fields)
		}
	}
}
