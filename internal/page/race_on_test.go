//go:build race

package page_test

// raceEnabled: the race detector slows every statement several times over.
const raceEnabled = true
