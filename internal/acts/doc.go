// Package acts is the act aggregate: financial acts, their data points,
// their history, and the fetch requests that refresh data points. It is
// the only writer of data_points, act_history and the fetch tables.
//
// An act is editable iff its status is draft. A data point snapshots its
// template field's definition (key, name, type, source, options) so that
// reading an act or building an event never consults the live template, and
// carries a revision that increments on every value change (fetch requests
// snapshot it to detect "changed since the request").
//
// The fetch flow (ARCHITECTURE.md, The act aggregate and the fetch flow): a user asks for
// a refresh of data points, the service fills built-in fields at once and
// asks integrations for the external ones through one act.fetch_data event,
// and integrations return correlated results through the act data PUTs.
//
// Every writer of an act's data points (fetch requests, correlated results,
// ordinary edits) first takes the act's row lock (Lock), so the checks a
// write makes stay true until it commits: on PostgreSQL a FOR UPDATE on the
// act row, on SQLite the database write lock every transaction takes at
// BEGIN.
//
// Decisions where the spec leaves room:
//
//   - Built-in fields are filled when the act is created (revision 0, no
//     history entry: the act's starting state) and refreshed by every fetch
//     request that selects them, by the system actor, with the request's id
//     in the history; the revision increments only when the value changes.
//     A provider value the field's type cannot hold makes that field's fetch
//     failed instead of storing a guess.
//   - A fetch request expires at expires_at: a result arriving at or after
//     it is too late.
//   - An unknown fetch_request_id (none of this act) is a 422 on
//     errors.fetch_request_id, not a 404: the act in the path exists.
//   - An identical re-send of an accepted value or a reported error is
//     accepted again (200, nothing written) even after expiry or a newer
//     request, so an integration retrying after a lost response never sees
//     a spurious conflict.
//   - An error text must be 1..1,000 characters.
//   - An ordinary edit to the value a field already has changes nothing (no
//     revision, no history). Any other ordinary edit increments the
//     revision, so a result still pending for that field gets 409.
package acts
