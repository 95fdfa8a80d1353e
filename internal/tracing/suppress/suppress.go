// Package suppress marks a context whose database statements must not make
// spans: background polls and maintenance that would otherwise start a
// one-span trace every time they look and find nothing (the delivery
// worker's claim, the janitors, the metrics' queries on a scrape).
//
// It holds only the mark, so that the packages that set it need no
// dependency on the tracing set-up; internal/tracing's database instrumentation
// reads it (tracing.InstrumentDB).
package suppress

import "context"

type key struct{}

// Context returns ctx marked: a statement run with it, or with a context
// derived from it, makes no span.
func Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, true)
}

// Active reports whether ctx is marked.
func Active(ctx context.Context) bool {
	v, _ := ctx.Value(key{}).(bool)
	return v
}
