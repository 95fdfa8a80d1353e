package httpapi

import (
	"strings"
	"testing"
)

// New reads the event types at start-up and refuses a spec whose callbacks
// and the outbox's kinds differ (a throwaway change of the in-memory spec).
func TestEventTypesRefuseAKindOnOneSide(t *testing.T) {
	spec, err := Spec()
	if err != nil {
		t.Fatal(err)
	}
	types, err := eventTypes(spec)
	if err != nil || len(types) != 12 {
		t.Fatalf("the spec's event types: %d, %v", len(types), err)
	}
	delete(spec.Paths.Value("/api/1.0/webhooks").Post.Callbacks, "actCreated")
	if _, err := eventTypes(spec); err == nil || !strings.Contains(err.Error(), "only in the outbox [act.created]") {
		t.Fatalf("without the act.created callback: %v", err)
	}
}
