package console

import (
	"fmt"
	"time"

	"github.com/finsvc/finsvc/internal/webhooks/outbox"
	"github.com/finsvc/finsvc/internal/webhooks/registry"
)

// Endpoint health charts, drawn on the server as SVG (no script): one bar
// per interval of outbox.AttemptBuckets. Each chart is an image with a
// <title> and a <desc> (its accessible name and description) and a text
// summary beside it with the same figures; each bar has a <title> of its
// own (a tooltip) naming its interval and figures.

// Chart geometry, in the SVG's own units (it scales to the page's width).
const (
	chartW, chartH = 480, 120
	plotTop        = 8
	plotH          = 92 // bars grow up from plotTop+plotH
)

// Colours of the bars (presentation attributes: the page's CSP admits no
// inline style).
const (
	colourGood  = "#2e7d32"
	colourWarn  = "#b26a00"
	colourBad   = "#c62828"
	colourBar   = "#1565c0"
	colourEmpty = "#9e9e9e"
)

type chartBar struct {
	X, Y, W, H float64
	Fill       string
	Title      string
}

type chart struct {
	ID, Title, Desc string
	Bars            []chartBar
	// Axis labels: the first interval's start, the end of the range, and
	// the top of the scale.
	Start, End, Top string
	Summary         string
}

// healthView is the two windows' charts.
type healthView struct {
	Windows []healthWindow
}

type healthWindow struct {
	Name          string // "24 hours", "7 days"
	Rate, Latency chart
}

func newHealthView(h *registry.Health) *healthView {
	return &healthView{Windows: []healthWindow{
		window("day", "24 hours", "hour", h.Day, registry.DayBucket),
		window("week", "7 days", "6 hours", h.Week, registry.WeekBucket),
	}}
}

func interval(b outbox.Bucket, size time.Duration) string {
	return b.Start.Format("Jan 2 15:04") + "–" + b.Start.Add(size).Format("15:04") + " UTC"
}

func window(id, name, per string, bs []outbox.Bucket, size time.Duration) healthWindow {
	var attempts, ok, maxMS, sumMS int64
	for _, b := range bs {
		attempts += b.Attempts
		ok += b.Succeeded
		sumMS += b.AvgMS * b.Attempts
		maxMS = max(maxMS, b.MaxMS)
	}
	start := bs[0].Start.Format("Jan 2 15:04")
	end := bs[len(bs)-1].Start.Add(size).Format("Jan 2 15:04") + " UTC"
	slot := float64(chartW) / float64(len(bs))
	w := healthWindow{Name: name,
		Rate:    chart{ID: "rate-" + id, Title: "Success rate, last " + name, Start: start, End: end, Top: "100%"},
		Latency: chart{ID: "latency-" + id, Title: "Latency, last " + name, Start: start, End: end, Top: fmt.Sprintf("%d ms", maxMS)},
	}
	if attempts == 0 {
		w.Rate.Summary = "No attempts in the last " + name + "."
		w.Latency.Summary = w.Rate.Summary
	} else {
		w.Rate.Summary = fmt.Sprintf("%s in the last %s, %s succeeded (%d).", plural(attempts, "attempt"), name, percent(ok, attempts), ok)
		w.Latency.Summary = fmt.Sprintf("Mean %d ms per attempt, slowest %d ms.", (sumMS+attempts/2)/attempts, maxMS)
	}
	w.Rate.Desc = fmt.Sprintf("Share of attempts answered with 2xx, per %s, %s to %s. %s", per, start, end, w.Rate.Summary)
	w.Latency.Desc = fmt.Sprintf("Mean duration of the attempts per %s (the slowest marked above each bar), %s to %s. %s", per, start, end, w.Latency.Summary)
	for i, b := range bs {
		x := float64(i)*slot + 1
		bw := slot - 2
		when := interval(b, size)
		if b.Attempts == 0 {
			empty := chartBar{X: x, Y: plotTop + plotH - 2, W: bw, H: 2, Fill: colourEmpty, Title: when + ": no attempts"}
			w.Rate.Bars = append(w.Rate.Bars, empty)
			w.Latency.Bars = append(w.Latency.Bars, empty)
			continue
		}
		rate, _ := b.SuccessRate()
		fill := colourGood
		switch {
		case rate < 0.9:
			fill = colourBad
		case rate < 0.99:
			fill = colourWarn
		}
		h := max(rate*plotH, 2) // a failed interval still shows
		if rate == 0 {
			fill = colourBad
		}
		w.Rate.Bars = append(w.Rate.Bars, chartBar{X: x, Y: plotTop + plotH - h, W: bw, H: h, Fill: fill,
			Title: fmt.Sprintf("%s: %s of %s succeeded", when, percent(b.Succeeded, b.Attempts), plural(b.Attempts, "attempt"))})
		title := fmt.Sprintf("%s: mean %d ms, slowest %d ms (%s)", when, b.AvgMS, b.MaxMS, plural(b.Attempts, "attempt"))
		ah, mh := scale(b.AvgMS, maxMS), scale(b.MaxMS, maxMS)
		w.Latency.Bars = append(w.Latency.Bars,
			chartBar{X: x, Y: plotTop + plotH - ah, W: bw, H: ah, Fill: colourBar, Title: title},
			chartBar{X: x, Y: plotTop + plotH - mh, W: bw, H: 2, Fill: colourBad, Title: title})
	}
	return w
}

// scale is v's bar height on a scale whose top is top.
func scale(v, top int64) float64 {
	if top <= 0 {
		return 2
	}
	return max(float64(v)/float64(top)*plotH, 2)
}

func percent(n, of int64) string {
	p := float64(n) / float64(of) * 100
	if p == float64(int64(p)) {
		return fmt.Sprintf("%d%%", int64(p))
	}
	return fmt.Sprintf("%.1f%%", p)
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
