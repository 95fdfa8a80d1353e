//go:build !race

package apitest_test

const raceEnabled = false
