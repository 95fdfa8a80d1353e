package openapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/openapi"
)

var (
	subscribable = []string{
		"act.fetch_data", "act.created", "act.duplicated", "act.updated", "act.finalized", "act.deleted",
		"act.data_updated", "fetch_request.completed", "client.created", "client.updated", "client.deleted",
	}
	sentOnly = []string{"webhook.test"}
)

func TestEventsOfTheSpec(t *testing.T) {
	events, err := openapi.Events(load(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Kind+"="+e.Schema)
	}
	want := "act.created=ActCreatedEvent act.data_updated=ActDataUpdatedEvent act.deleted=ActDeletedEvent " +
		"act.duplicated=ActDuplicatedEvent act.fetch_data=ActFetchDataEvent act.finalized=ActFinalizedEvent " +
		"act.updated=ActUpdatedEvent client.created=ClientCreatedEvent client.deleted=ClientDeletedEvent " +
		"client.updated=ClientUpdatedEvent fetch_request.completed=FetchRequestCompletedEvent webhook.test=WebhookTestEvent"
	if strings.Join(got, " ") != want {
		t.Fatalf("events %v, want %s", got, want)
	}
	if err := openapi.CheckEventKinds(load(t), subscribable, sentOnly); err != nil {
		t.Fatal(err)
	}
}

// An event kind on one side only fails, whichever side: shown with a
// throwaway change of the in-memory spec or of the outbox's list.
func TestEventKindOnOneSideOnly(t *testing.T) {
	for name, tc := range map[string]struct {
		change       func(*openapi3.T)
		subscribable []string
		want         string
	}{
		"a kind the outbox sends that no callback describes": {
			func(*openapi3.T) {}, append(slices.Clone(subscribable), "invoice.created"),
			"only in the callbacks of createWebhook [], only in the outbox [invoice.created]",
		},
		"a callback the outbox never sends": {
			func(*openapi3.T) {}, without(subscribable, "act.duplicated"),
			"only in the callbacks of createWebhook [act.duplicated], only in the outbox []",
		},
		"a callback removed from the spec": {
			func(s *openapi3.T) { delete(s.Paths.Value("/api/1.0/webhooks").Post.Callbacks, "actDuplicated") },
			subscribable, "only in the callbacks of createWebhook [], only in the outbox [act.duplicated]",
		},
		"a kind missing from the EventKind enum": {
			func(s *openapi3.T) {
				var enum []any
				for _, k := range without(subscribable, "act.duplicated") {
					enum = append(enum, k)
				}
				s.Components.Schemas["EventKind"].Value.Enum = enum
			},
			subscribable, "only in the spec's EventKind [], only in the outbox [act.duplicated]",
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := load(t)
			tc.change(spec)
			err := openapi.CheckEventKinds(spec, tc.subscribable, sentOnly)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func without(s []string, x string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(y string) bool { return y == x })
}
