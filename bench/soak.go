package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/finsvc/finsvc/internal/integration"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// soakOp is one kind of request of the mixed load.
type soakOp struct {
	name string
	lat  []time.Duration
	n    int
	errs int
	r429 int
	err1 string
}

// runSoak drives a bounded mixed load for o.soak: reads (GET by id, list),
// ordinary bulk PUTs, and fetch requests answered by the reference
// integration on a loopback receiver through the real delivery worker. It
// fails on any error other than 429, and reports p99 per kind and the RSS
// of the process (server, worker, receiver and generator) at start and end.
func runSoak(ctx context.Context, o options, out io.Writer) error {
	// As cmd/finsvc does: a delivery worker in the replica, woken by the
	// outbox at commit.
	e, err := serveFresh(ctx, o.databaseURL, true, true)
	if err != nil {
		return err
	}
	defer e.Close()
	ids, err := e.seedClients(min(o.clients, 200))
	if err != nil {
		return err
	}

	// The loopback receiver: the reference integration, writing results
	// back with one correlated bulk PUT per event.
	var recvMu sync.Mutex
	recvStatus := map[int]int{}
	var recvErrs []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var receiver *integration.Receiver
	recvSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { receiver.ServeHTTP(w, r) })}
	go recvSrv.Serve(ln)
	defer recvSrv.Close()
	var hook struct {
		Secret string `json:"secret"`
	}
	if err := e.api("POST", "/api/1.0/webhooks", map[string]any{"event": "act.fetch_data", "target": "http://" + ln.Addr().String() + "/hook"}, &hook, http.StatusCreated); err != nil {
		return fmt.Errorf("register webhook: %w", err)
	}
	receiver, err = integration.New(integration.Config{
		Secrets: []string{hook.Secret}, BaseURL: e.FullURL, Host: host, Token: e.Token,
		OnDone: func(_ string, status int, err error) {
			recvMu.Lock()
			defer recvMu.Unlock()
			recvStatus[status]++
			if err != nil && len(recvErrs) < 5 {
				recvErrs = append(recvErrs, err.Error())
			}
		},
	})
	if err != nil {
		return err
	}
	defer receiver.Close(context.Background())

	const fields = 20
	var tmplFields []map[string]any
	for i := range fields {
		tmplFields = append(tmplFields, map[string]any{"key": fmt.Sprintf("f%02d", i), "name": fmt.Sprintf("Field %d", i), "type": "text", "source": "external_data"})
	}
	var tmpl struct {
		ID int64 `json:"id"`
	}
	if err := e.api("POST", "/api/1.0/templates", map[string]any{"name": "Soak", "fields": tmplFields}, &tmpl, http.StatusCreated); err != nil {
		return err
	}
	type act struct {
		UUID string `json:"uuid"`
		Data []struct {
			ID  int64  `json:"id"`
			Key string `json:"template_field_key"`
		} `json:"data"`
	}
	newAct := func(i int64) (*act, error) {
		var a act
		err := e.api("POST", "/api/1.0/acts", map[string]any{"client_id": ids[i%int64(len(ids))], "template_id": tmpl.ID, "title": fmt.Sprintf("Soak %d", i)}, &a, http.StatusCreated)
		return &a, err
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.conc * 2, DisableCompression: true}}
	ops := []*soakOp{{name: "GET /clients/{id}"}, {name: "GET /clients?limit=100"}, {name: "PUT /acts/{uuid}/data (ordinary, 20 fields)"},
		{name: "POST /acts + POST fetch-requests (20 external fields)"}}
	var mu sync.Mutex
	record := func(op *soakOp, lat time.Duration, code int, body string, err error) {
		mu.Lock()
		defer mu.Unlock()
		op.n++
		op.lat = append(op.lat, lat)
		switch {
		case err != nil:
			op.errs++
			if op.err1 == "" {
				op.err1 = err.Error()
			}
		case code == http.StatusTooManyRequests:
			op.r429++
		case code < 200 || code > 299:
			op.errs++
			if op.err1 == "" {
				op.err1 = fmt.Sprintf("%d %.300s", code, body)
			}
		}
	}
	send := func(op *soakOp, req *http.Request, reqErr error) {
		if reqErr != nil {
			record(op, 0, 0, "", reqErr)
			return
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			record(op, time.Since(t0), 0, "", err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		record(op, time.Since(t0), resp.StatusCode, string(b), nil)
	}

	rss0 := rss()
	var rssMax atomic.Int64
	rssMax.Store(rss0)
	fmt.Fprintf(out, "soak: %s of mixed load with %d connections (RSS at start %s)…\n", o.soak, o.conc, mib(rss0))
	lctx, cancel := context.WithTimeout(ctx, o.soak)
	defer cancel()
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				if r := rss(); r > rssMax.Load() {
					rssMax.Store(r)
				}
			}
		}
	}()
	var fetches atomic.Int64
	var seq atomic.Int64
	var wg sync.WaitGroup
	for w := range o.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own, err := newAct(int64(w))
			if err != nil {
				record(ops[2], 0, 0, "", err)
				return
			}
			for lctx.Err() == nil {
				i := seq.Add(1)
				switch i % 20 {
				case 0: // a fetch request: the worker delivers, the receiver writes back
					t0 := time.Now()
					a, err := newAct(i)
					if err == nil {
						dps := make([]int64, 0, len(a.Data))
						for _, dp := range a.Data {
							dps = append(dps, dp.ID)
						}
						err = e.api("POST", "/api/1.0/acts/"+a.UUID+"/fetch-requests", map[string]any{"data_point_ids": dps}, nil, http.StatusCreated)
					}
					if err == nil {
						fetches.Add(1)
					}
					record(ops[3], time.Since(t0), 201, "", err)
				case 1, 2: // an ordinary bulk edit of the worker's own act
					items := make([]map[string]any, 0, len(own.Data))
					for _, dp := range own.Data {
						items = append(items, map[string]any{"id": dp.ID, "value": "v" + strconv.FormatInt(i, 10)})
					}
					req, err := e.request("PUT", "/api/1.0/acts/"+own.UUID+"/data", map[string]any{"data": items})
					send(ops[2], req, err)
				case 3, 4:
					req, err := e.request("GET", fmt.Sprintf("/api/1.0/clients?limit=100&page=%d", 1+i%2), nil)
					send(ops[1], req, err)
				default:
					req, err := e.request("GET", fmt.Sprintf("/api/1.0/clients/%d", ids[i%int64(len(ids))]), nil)
					send(ops[0], req, err)
				}
			}
		}()
	}
	wg.Wait()
	rss1 := rss()

	// Let the loop drain: every fetch request delivered and answered.
	deadline := time.Now().Add(60 * time.Second)
	var answered int
	for {
		recvMu.Lock()
		answered = 0
		for _, n := range recvStatus {
			answered += n
		}
		recvMu.Unlock()
		if int64(answered) >= fetches.Load() || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var awaiting int64
	_ = e.DB.WithContext(ctx).Raw("SELECT count(*) FROM fetch_request_fields WHERE state = 'awaiting'").Scan(&awaiting).Error
	pending, delivering, _ := outbox.Depth(ctx, e.DB)
	pending += delivering

	fmt.Fprintln(out)
	fmt.Fprintln(out, machine(ctx, e.DB))
	fmt.Fprintf(out, "soak: %s, %d connections, token cache on, delivery worker and reference integration in process\n\n", o.soak, o.conc)
	fmt.Fprint(out, "| request | count | errors (non-429) | 429 | p50 | p99 |\n|---|---:|---:|---:|---:|---:|\n")
	var failed []string
	for _, op := range ops {
		slices.Sort(op.lat)
		fmt.Fprintf(out, "| %s | %d | %d | %d | %s | %s |\n", op.name, op.n, op.errs, op.r429, ms(Percentile(op.lat, 50)), ms(Percentile(op.lat, 99)))
		if op.errs > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d errors, first: %s", op.name, op.errs, op.err1))
		}
	}
	recvMu.Lock()
	fmt.Fprintf(out, "\nfetch requests: %d created; receiver write-backs by API status: %v; fields still awaiting: %d; deliveries pending: %d\n",
		fetches.Load(), recvStatus, awaiting, pending)
	if recvStatus[http.StatusOK] != int(fetches.Load()) {
		failed = append(failed, fmt.Sprintf("only %d of %d fetch requests were answered with 200 (errors: %v)", recvStatus[http.StatusOK], fetches.Load(), recvErrs))
	}
	recvMu.Unlock()
	if awaiting > 0 {
		failed = append(failed, fmt.Sprintf("%d fields still awaiting", awaiting))
	}
	fmt.Fprintf(out, "RSS: start %s, end %s, max %s\n", mib(rss0), mib(rss1), mib(max(rssMax.Load(), rss1)))
	if len(failed) > 0 {
		return errors.New("soak failed:\n  " + strings.Join(failed, "\n  "))
	}
	fmt.Fprintln(out, "soak: OK (0 errors other than 429)")
	return nil
}

// rss is the process's resident set size in bytes (Linux), 0 if unknown.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
