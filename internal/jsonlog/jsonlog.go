// Package jsonlog is the service's JSON log handler: the lines of
// slog.JSONHandler, byte for byte, written without its general machinery for
// the records that need none of it.
//
// Every request writes an access line (internal/httpapi), so the handler is on
// the hot path: slog's JSON handler spent about a tenth of a
// GET /clients/{id}'s instructions on it, mostly in its per-record state,
// its attribute resolution and a json.Marshal for every float (BENCHMARKS.md,
// "The middleware chain, the access line and the response body"). A record
// whose attributes are all flat scalars (string, integers, bool, duration,
// time, finite float) is written here directly; anything else (groups,
// LogValuers, Any values, empty keys, ReplaceAttr, AddSource,
// WithAttrs/WithGroup) goes to slog.JSONHandler itself, so the output never
// depends on which path wrote it. TestSameBytes and FuzzSameBytes hold the
// two to the same bytes.
package jsonlog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/finsvc/finsvc/internal/jsonenc"
)

// Handler writes JSON lines. Build it with New.
type Handler struct {
	slow  slog.Handler // slog.JSONHandler on the same writer
	w     *lockedWriter
	level slog.Leveler
	fast  bool // no ReplaceAttr and no AddSource
}

// New returns a handler writing to w what slog.NewJSONHandler(w, opts)
// would write.
func New(w io.Writer, opts *slog.HandlerOptions) *Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	lw := &lockedWriter{w: w}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	return &Handler{
		slow:  slog.NewJSONHandler(lw, opts),
		w:     lw,
		level: level,
		fast:  opts.ReplaceAttr == nil && !opts.AddSource,
	}
}

// lockedWriter serializes the lines of both paths (and of the handlers
// derived with WithAttrs and WithGroup): each is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Enabled reports whether level is at or above the handler's level.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// WithAttrs and WithGroup derive slog's own handler: derived loggers are
// for background work, not for the per-request line.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler { return h.slow.WithAttrs(attrs) }

// WithGroup is WithAttrs for a group: see WithAttrs.
func (h *Handler) WithGroup(name string) slog.Handler { return h.slow.WithGroup(name) }

const maxPooled = 16 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle writes r as one line.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.fast || !flat(r) {
		return h.slow.Handle(ctx, r)
	}
	bp := buffers.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = jsonenc.Minimal(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = jsonenc.Minimal(b, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b = append(b, ',')
		b = jsonenc.Minimal(b, a.Key)
		b = append(b, ':')
		b = appendValue(b, a.Value)
		return true
	})
	b = append(b, "}\n"...)
	_, err := h.w.Write(b)
	if cap(b) <= maxPooled {
		*bp = b
		buffers.Put(bp)
	}
	return err
}

// flat reports whether every attribute of r, and its time, can be written
// here exactly as slog would.
func flat(r slog.Record) bool {
	if y := r.Time.Year(); !r.Time.IsZero() && (y < 0 || y >= 10000) {
		return false // slog appends an error to the line
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		ok = simple(a)
		return ok
	})
	return ok
}

func simple(a slog.Attr) bool {
	if a.Key == "" {
		return false // an empty attribute is dropped, an empty group inlined
	}
	switch v := a.Value; v.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		return true
	case slog.KindFloat64:
		f := v.Float64()
		return !math.IsNaN(f) && !math.IsInf(f, 0) // slog writes an error for these
	case slog.KindTime:
		y := v.Time().Year()
		return y >= 0 && y < 10000
	}
	return false // Any, Group, LogValuer
}

func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return jsonenc.Minimal(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindFloat64:
		return appendFloat(b, v.Float64())
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	panic("jsonlog: not a flat value: " + v.Kind().String()) // flat said it was
}

// appendFloat writes f as encoding/json does (slog marshals floats with it):
// 'f' format between 1e-6 and 1e21, otherwise 'e' with a short exponent.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
