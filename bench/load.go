package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// scenario is one kind of request under load.
type scenario struct {
	Name string
	// Next builds the i-th request (i counts from 0 across all workers).
	Next func(i int64) (*http.Request, error)
	// Want is the expected status; anything else counts as an error.
	Want int
	// Max bounds the number of requests (0: only the duration bounds it):
	// used when every request consumes prepared state (a fetch request).
	Max int64
}

// result is what one measured run of a scenario produced.
type result struct {
	Name     string
	N        int
	Errors   int
	Codes    map[int]int
	Elapsed  time.Duration
	Lat      []time.Duration // sorted
	FirstErr string
}

func (r *result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.N) / r.Elapsed.Seconds()
}

// Percentile is the nearest-rank percentile (p in (0, 100]) of the sorted
// latencies: the smallest value such that at least p% of the samples are
// at or below it.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// merge combines runs of the same scenario (rounds).
func merge(rs []*result) *result {
	out := &result{Name: rs[0].Name, Codes: map[int]int{}}
	for _, r := range rs {
		out.N += r.N
		out.Errors += r.Errors
		out.Elapsed += r.Elapsed
		out.Lat = append(out.Lat, r.Lat...)
		for c, n := range r.Codes {
			out.Codes[c] += n
		}
		if out.FirstErr == "" {
			out.FirstErr = r.FirstErr
		}
	}
	slices.Sort(out.Lat)
	return out
}

// run drives sc with conc workers for dur (or until sc.Max requests), each
// worker sending its next request as soon as the previous one answered
// (closed loop). Latency is measured from send to the last body byte.
func run(ctx context.Context, client *http.Client, sc scenario, conc int, dur time.Duration) *result {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var next atomic.Int64
	type local struct {
		lat      []time.Duration
		errs     int
		codes    map[int]int
		firstErr string
	}
	locals := make([]local, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &locals[w]
			l.codes = map[int]int{}
			l.lat = make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if sc.Max > 0 && i >= sc.Max {
					return
				}
				req, err := sc.Next(i)
				if err != nil {
					l.errs++
					l.firstErr = err.Error()
					return
				}
				t0 := time.Now()
				resp, err := client.Do(req.WithContext(ctx))
				if err != nil {
					if ctx.Err() != nil {
						return // the phase ended mid-request: not a sample
					}
					l.errs++
					if l.firstErr == "" {
						l.firstErr = err.Error()
					}
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat := time.Since(t0)
				l.codes[resp.StatusCode]++
				if resp.StatusCode != sc.Want {
					l.errs++
					if l.firstErr == "" {
						l.firstErr = fmt.Sprintf("%d: %.300s", resp.StatusCode, body)
					}
				}
				l.lat = append(l.lat, lat)
			}
		}()
	}
	wg.Wait()
	r := &result{Name: sc.Name, Elapsed: time.Since(start), Codes: map[int]int{}}
	for _, l := range locals {
		r.Lat = append(r.Lat, l.lat...)
		r.Errors += l.errs
		for c, n := range l.codes {
			r.Codes[c] += n
		}
		if r.FirstErr == "" {
			r.FirstErr = l.firstErr
		}
	}
	r.N = len(r.Lat)
	slices.Sort(r.Lat)
	return r
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// table renders results as a Markdown table.
func table(rs []*result) string {
	var b strings.Builder
	b.WriteString("| scenario | requests | errors | req/s | p50 | p99 |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %s | %s |\n", r.Name, r.N, r.Errors, r.RPS(),
			ms(Percentile(r.Lat, 50)), ms(Percentile(r.Lat, 99)))
	}
	return b.String()
}

func codes(r *result) string {
	keys := make([]int, 0, len(r.Codes))
	for c := range r.Codes {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	var parts []string
	for _, c := range keys {
		parts = append(parts, fmt.Sprintf("%d×%d", r.Codes[c], c))
	}
	return strings.Join(parts, " ")
}
