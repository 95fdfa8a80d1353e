// Package integration is the reference integration: a webhook receiver for
// act.fetch_data that shows integrators the whole loop.
//
//  1. Verify X-Signature over the raw body (sign.VerifyAny; any of the
//     configured secrets, so the receiver survives a rotation) and reject
//     anything else with 401.
//  2. Deduplicate by the event id and answer 202 at once; the work happens
//     in the background, because the sender counts a slow answer as a
//     failed attempt and would retry.
//  3. Handle only the entries with external_data_field true, produce a
//     value for each (here fieldtype.Example stands in for a real data
//     source), and PUT them back in ONE bulk call with fetch_request_id
//     before expires_at.
//
// A redelivered event resumes unfinished work only (the contract's rule for redelivered events):
// an event whose results were accepted, or are being produced, is
// acknowledged and ignored; one whose write-back failed is tried again.
package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/finsvc/finsvc/gen/apiclient"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/fieldtype"
	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// MaxBody caps a delivery body read by the receiver.
const MaxBody = 1 << 20

// Config configures a Receiver.
type Config struct {
	// Secrets are the webhook signing secrets to accept (the current one,
	// plus the previous one while rotating).
	Secrets []string
	// BaseURL is where the finsvc API is, e.g. https://acme.finsvc.example.
	BaseURL string
	// Host, when set, is sent as the Host header (a tenant host when
	// BaseURL is an address, as with `finsvc demo` on localhost).
	Host string
	// Token is the OAuth access token (acts:write) used for write-back.
	Token string
	// HTTPClient calls the API (default: 30 s timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
	// Produce fetches one external value. The default fabricates a valid
	// value with fieldtype.Example. Return an error to report the fetch as
	// failed for that field (the error text is sent to finsvc: keep
	// secrets and raw source responses out of it).
	Produce func(ctx context.Context, f Field) (string, error)
	// OnDone, if set, is called when an event's background work ends
	// (tests, metrics). status is the API's HTTP status, 0 if none.
	OnDone func(eventID string, status int, err error)
}

// Field is one entry of an act.fetch_data event's data.fields.
type Field struct {
	ID                int64              `json:"id"`
	TemplateFieldID   int64              `json:"template_field_id"`
	TemplateFieldKey  string             `json:"template_field_key"`
	TemplateFieldName string             `json:"template_field_name"`
	Type              string             `json:"type"`
	ExternalDataField bool               `json:"external_data_field"`
	Source            string             `json:"source"`
	Options           *fieldtype.Options `json:"options"`
}

// FetchData is the data of an act.fetch_data event.
type FetchData struct {
	RequestID   uuid.UUID `json:"request_id"`
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	Act         struct {
		UUID uuid.UUID `json:"uuid"`
	} `json:"act"`
	Fields []Field `json:"fields"`
}

type envelope struct {
	ID         string          `json:"id"`
	Event      string          `json:"event"`
	OccurredAt time.Time       `json:"occurred_at"`
	Data       json.RawMessage `json:"data"`
}

type state int

// entry is what the receiver remembers of an event. Entries are kept for
// dedupeTTL, longer than the sender's whole retry schedule (~28 h).
type entry struct {
	state state
	at    time.Time
}

const dedupeTTL = 48 * time.Hour

const (
	working state = iota + 1
	done
	failed
)

// Receiver is the webhook endpoint (an http.Handler).
type Receiver struct {
	cfg    Config
	client *apiclient.ClientWithResponses
	log    *slog.Logger

	mu     sync.Mutex
	events map[string]entry // event id → progress; see claim
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a Receiver.
func New(cfg Config) (*Receiver, error) {
	if len(cfg.Secrets) == 0 || cfg.Secrets[0] == "" {
		return nil, errors.New("integration: a webhook secret is required")
	}
	if cfg.BaseURL == "" || cfg.Token == "" {
		return nil, errors.New("integration: the finsvc base URL and an access token are required")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Produce == nil {
		cfg.Produce = Example
	}
	c, err := apiclient.NewClientWithResponses(cfg.BaseURL, apiclient.WithHTTPClient(cfg.HTTPClient),
		apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+cfg.Token)
			req.Header.Set("Accept", "application/json")
			if cfg.Host != "" {
				req.Host = cfg.Host
			}
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("integration: API client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Receiver{cfg: cfg, client: c, log: cfg.Logger, events: map[string]entry{}, ctx: ctx, cancel: cancel}, nil
}

// Example produces a valid value for the field's type and options.
func Example(_ context.Context, f Field) (string, error) {
	v := fieldtype.Example(fieldtype.Type(f.Type), f.Options)
	if v == "" && f.Type != string(fieldtype.Text) {
		return "", fmt.Errorf("no value source for a %s field", f.Type)
	}
	return v, nil
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
	if err != nil || len(body) > MaxBody {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	// Verify the exact bytes received, before decoding anything.
	if err := sign.VerifyAny(r.cfg.Secrets, req.Header.Get(sign.HeaderSignature), body, r.cfg.Now()); err != nil {
		r.log.Warn("rejected delivery", "err", err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.ID == "" {
		http.Error(w, "bad envelope", http.StatusBadRequest)
		return
	}
	if env.Event != "act.fetch_data" {
		w.WriteHeader(http.StatusAccepted) // acknowledged; not ours to handle
		return
	}
	var data FetchData
	if err := json.Unmarshal(env.Data, &data); err != nil {
		http.Error(w, "bad act.fetch_data payload", http.StatusBadRequest)
		return
	}
	if r.claim(env.ID) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.handle(env.ID, &data)
		}()
	}
	w.WriteHeader(http.StatusAccepted)
}

// claim reports whether this delivery should start work: not when the event
// is being handled or was handled; yes when it is new or its last try
// failed.
func (r *Receiver) claim(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	if e, ok := r.events[id]; ok && e.state != failed {
		return false
	}
	if len(r.events) >= 10000 {
		for k, e := range r.events {
			if now.Sub(e.at) > dedupeTTL {
				delete(r.events, k)
			}
		}
	}
	r.events[id] = entry{state: working, at: now}
	return true
}

func (r *Receiver) finish(id string, s state, status int, err error) {
	r.mu.Lock()
	r.events[id] = entry{state: s, at: r.cfg.Now()}
	r.mu.Unlock()
	if r.cfg.OnDone != nil {
		r.cfg.OnDone(id, status, err)
	}
}

func (r *Receiver) handle(eventID string, d *FetchData) {
	log := r.log.With("event_id", eventID, "fetch_request_id", d.RequestID, "act_uuid", d.Act.UUID)
	// Results are useless after expires_at: stop there.
	ctx, cancel := context.WithDeadline(r.ctx, d.ExpiresAt)
	defer cancel()
	if !r.cfg.Now().Before(d.ExpiresAt) {
		log.Info("fetch request already expired")
		r.finish(eventID, done, 0, nil)
		return
	}
	items := make([]models.BulkDataItem, 0, len(d.Fields))
	for _, f := range d.Fields {
		if !f.ExternalDataField {
			continue // built-in: the service fills it
		}
		id := f.ID
		item := models.BulkDataItem{Id: &id}
		v, err := r.cfg.Produce(ctx, f)
		if err != nil {
			msg := err.Error()
			if len(msg) > 1000 {
				msg = msg[:1000]
			}
			item.Error = &msg
		} else {
			item.Value = &v
		}
		items = append(items, item)
	}
	if len(items) == 0 {
		r.finish(eventID, done, 0, nil)
		return
	}
	reqID := d.RequestID
	resp, err := r.client.PutActDataWithResponse(ctx, d.Act.UUID, models.BulkDataWrite{FetchRequestId: &reqID, Data: items})
	if err != nil {
		log.Error("write back results", "err", err)
		r.finish(eventID, failed, 0, err)
		return
	}
	switch code := resp.StatusCode(); {
	case code == http.StatusOK:
		log.Info("results accepted", "fields", len(items))
		r.finish(eventID, done, code, nil)
	case code == http.StatusConflict:
		// Stale: superseded, changed meanwhile or expired. Nothing to retry.
		log.Info("results refused as stale", "status", code)
		r.finish(eventID, done, code, nil)
	default:
		err := fmt.Errorf("write back results: status %d", code)
		log.Error("write back results", "status", code)
		r.finish(eventID, failed, code, err)
	}
}

// Close stops background work: it waits for it until ctx is done, then
// cancels what is left.
func (r *Receiver) Close(ctx context.Context) {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.cancel()
		<-done
	}
	r.cancel()
}
