package console_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/finsvc/finsvc/internal/web/browsertest"
)

// TestBrowserWebhookPageDeliveriesFirst, in Chromium: on a webhook's page
// the delivery log starts within the first screen at 1280×800, and within
// one scroll on a phone (390×844); the edit form is folded behind "Edit"
// until that is opened. The page is checked at both widths (axe-core
// included) by Shoot.
func TestBrowserWebhookPageDeliveriesFirst(t *testing.T) {
	browsertest.Chromium(t)
	env := newEnv(t)
	acme := newOrg(t, env, "acme")
	wh := acme.webhook(t, acme.admin, "https://127.0.0.1:9/hook")
	b, _ := signIn(t, acme, acme.admin, fmt.Sprintf("/console/webhooks/%d", wh.Id))
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		b.Do(fmt.Sprintf("viewport %d px", size[0]), chromedp.EmulateViewport(size[0], size[1]))
		top := eval[float64](t, b, `document.getElementById('log').getBoundingClientRect().top + window.scrollY`)
		height := eval[float64](t, b, `window.innerHeight`)
		screens := 1.0
		if size[0] < 600 {
			screens = 2 // one scroll on a phone
		}
		if top <= 0 || top > screens*height {
			t.Errorf("at %d px the deliveries start %.0f px down (the screen is %.0f px)", size[0], top, height)
		}
	}
	hidden := eval[bool](t, b, `!document.getElementById('edit').open && !document.getElementById('save-target').checkVisibility()`)
	b.Do("open Edit", chromedp.Click(chromedp.CSS(`#edit > summary`)))
	shown := eval[bool](t, b, `document.getElementById('edit').open && document.getElementById('save-target').checkVisibility()`)
	if !hidden || !shown {
		t.Errorf("the edit form: hidden before Edit %v, shown after %v", hidden, shown)
	}
	b.Shoot("webhook-page")
}

// eval is the value of a JavaScript expression on b's page.
func eval[T any](t *testing.T, b *browsertest.Browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}
