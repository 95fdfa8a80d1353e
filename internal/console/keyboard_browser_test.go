package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// kbCollect marks every control of the page a keyboard user should reach
// with data-kb, its stop's number, and describes each stop. Controls are
// what takes focus by nature (links, buttons, form fields, summaries) or
// by a tabindex of 0 or more; a control with tabindex="-1" is still
// collected, since a link or button taken out of the tab order is what
// this test is for. Left out: disabled controls and those not rendered
// (display:none, visibility:hidden, the hidden attribute). Every <details>
// is opened first, so that what a closed one holds is checked too (its
// summary, which opens it, is a stop either way). The radio buttons of a
// group are one stop: Tab enters the group, the arrow keys move within it.
const kbCollect = `(() => {
  for (const d of document.querySelectorAll('details:not([open])')) d.open = true;
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, [tabindex]:not([tabindex="-1"]), summary';
  const stops = [];
  const groups = new Map();
  for (const el of document.querySelectorAll(sel)) {
    if (el.disabled || el.matches(':disabled') || !el.checkVisibility({visibilityProperty: true})) continue;
    if (el.type === 'radio' && el.name) {
      const key = (el.form ? el.form.id || 'form' : '') + '/' + el.name;
      if (groups.has(key)) { el.dataset.kb = groups.get(key); continue; }
      groups.set(key, stops.length);
    }
    el.dataset.kb = stops.length;
    const label = el.getAttribute('aria-label') || (el.labels && el.labels[0] ? el.labels[0].textContent : '') ||
      el.textContent || el.name || el.value || '';
    stops.push('<' + el.tagName.toLowerCase() + (el.id ? ' id=' + el.id : '') +
      (el.getAttribute('href') ? ' href=' + el.getAttribute('href') : '') +
      (el.getAttribute('tabindex') !== null ? ' tabindex=' + el.getAttribute('tabindex') : '') +
      '> "' + label.trim().replace(/\s+/g, ' ').slice(0, 50) + '"');
  }
  if (document.activeElement) document.activeElement.blur();
  return stops;
})()`

// kbStyle is how an element shows focus: outline and box shadow.
const kbStyle = `el => { const s = getComputedStyle(el); return s.outlineStyle + ' ' + s.outlineWidth + ' ' + s.outlineColor + ' | ' + s.boxShadow }`

// kbFocused names the focused element: its stop (-1 when it is no
// collected control: the document itself, or something kbCollect missed,
// described then) and its focus style, taken while it has focus.
const kbFocused = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return {stop: -1, what: '', style: ''};
  if (el.dataset.kb === undefined) return {stop: -1, what: el.outerHTML.slice(0, 120), style: ''};
  return {stop: +el.dataset.kb, what: '', style: (` + kbStyle + `)(el)};
})()`

// kbBlurred is each stop's style with nothing focused.
const kbBlurred = `(() => {
  if (document.activeElement) document.activeElement.blur();
  const out = {};
  for (const el of document.querySelectorAll('[data-kb]')) if (!(el.dataset.kb in out)) out[el.dataset.kb] = (` + kbStyle + `)(el);
  return out;
})()`

type kbFocus struct {
	Stop  int    `json:"stop"`
	What  string `json:"what"`
	Style string `json:"style"`
}

// TestBrowserKeyboardReachesEveryControl walks every console page with the
// Tab key, at 1280 and at 390 px, as an admin of a tenant with data on
// each page (webhooks with deliveries of two attempts, an act with a fetch
// request, users, audit records): every control a user should reach
// (kbCollect) takes focus within a full cycle of Tab presses, and each
// shows it (its outline or box shadow differs from its unfocused state).
// The pages are those of the navigation as the admin sees it, plus the
// pages reached from them: a webhook, its secret, a delivery, the new
// webhook form, an act.
func TestBrowserKeyboardReachesEveryControl(t *testing.T) {
	browsertest.Chromium(t)
	rcv := &headerLog{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	env := newEnv(t)
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.App.Stop)
	acme := newOrg(t, env, "acme")
	wh := acme.webhook(t, acme.admin, srv.URL+"/hook")
	acme.webhook(t, acme.member, "https://127.0.0.1:9/member")
	a := fetchedAct(t, env, acme)

	// A delivery attempted twice: its page holds a closed <details>.
	var d models.Delivery
	acme.Do("POST", fmt.Sprintf("/api/1.0/webhooks/%d/test", wh.Id), acme.admin.token, nil).Status(t, http.StatusAccepted).Decode(t, &d)
	delivered := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(rcv.got()) < n || d.Status != models.DeliverySucceeded {
			if time.Now().After(deadline) {
				t.Fatalf("delivery %s: %s after 30 s, %d requests received; want %d", d.Id, d.Status, len(rcv.got()), n)
			}
			time.Sleep(100 * time.Millisecond) // polling interval, not an assertion
			for _, x := range acme.deliveries(t, wh.Id) {
				if x.Id == d.Id {
					d = x
				}
			}
		}
	}
	delivered(1)
	acme.Do("POST", fmt.Sprintf("/api/1.0/webhooks/%d/deliveries/%s/redeliver", wh.Id, d.Id), acme.admin.token, nil).Status(t, http.StatusAccepted)
	d.Status = models.DeliveryPending
	delivered(2)

	hook := fmt.Sprintf("/console/webhooks/%d", wh.Id)
	for _, width := range []int64{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			b, base := signInWith(t, browsertest.Options{Timeout: 5 * time.Minute}, acme, acme.admin, "/console/webhooks")
			b.Do("viewport", chromedp.EmulateViewport(width, 844))
			pages := browsertest.Eval[[]string](b, `[...document.querySelectorAll('nav[aria-label=Main] a[href]')].map(a => a.getAttribute('href'))`)
			if len(pages) < 4 {
				t.Fatalf("navigation: %v", pages)
			}
			pages = append(pages, hook, hook+"/secret", hook+"/deliveries/"+d.Id.String(), "/console/webhooks/new", "/console/acts/"+a.Uuid.String())
			for _, path := range pages {
				b.Open(base + path)
				if b.Path() != path {
					t.Fatalf("opened %s, at %s", path, b.Path())
				}
				if path == hook+"/deliveries/"+d.Id.String() && b.Count("details.headers:not([open])") == 0 {
					t.Fatal("the delivery page has no closed details to open")
				}
				walkKeyboard(t, b, path)
			}
		})
	}
}

// walkKeyboard presses Tab from the top of the page until focus has gone
// round once (or 3× the stops, plus a margin, were pressed) and fails for
// each stop never focused, and for each focused one that looks the same
// with and without focus.
func walkKeyboard(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	stops := browsertest.Eval[[]string](b, kbCollect)
	if len(stops) < 3 {
		t.Fatalf("%s: only %d controls found: %v", page, len(stops), stops)
	}
	focused := map[int]string{} // stop → its style while focused
	first := -1
	presses := 0
	for ; presses < 3*len(stops)+5; presses++ {
		b.Do("tab", chromedp.KeyEvent(kb.Tab))
		f := browsertest.Eval[kbFocus](b, kbFocused)
		if f.What != "" {
			t.Logf("%s: focus on an element not collected: %s", page, f.What)
		}
		if f.Stop < 0 {
			continue
		}
		if f.Stop == first && len(focused) > 1 {
			break // round once
		}
		if first < 0 {
			first = f.Stop
		}
		if _, seen := focused[f.Stop]; !seen {
			focused[f.Stop] = f.Style
		}
	}
	blurred := browsertest.Eval[map[string]string](b, kbBlurred)
	var unreached, unmarked []string
	for i, s := range stops {
		style, ok := focused[i]
		switch {
		case !ok:
			unreached = append(unreached, s)
		case style == blurred[fmt.Sprint(i)]:
			unmarked = append(unmarked, s+" ("+style+")")
		}
	}
	if len(unreached) > 0 {
		t.Errorf("%s: %d of %d controls never took focus in %d Tab presses:\n\t%s", page, len(unreached), len(stops), presses, strings.Join(unreached, "\n\t"))
	}
	if len(unmarked) > 0 {
		t.Errorf("%s: %d controls look the same focused and not:\n\t%s", page, len(unmarked), strings.Join(unmarked, "\n\t"))
	}
	if len(unreached)+len(unmarked) == 0 {
		t.Logf("%s: %d controls, each focused and marked, in %d Tab presses", page, len(stops), presses)
	}
}
