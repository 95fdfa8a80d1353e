//go:build !race

package page_test

const raceEnabled = false
