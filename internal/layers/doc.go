// Package layers has no code: its test enforces the import rules that
// ARCHITECTURE.md states ("what may import what"), so that a rule written
// there cannot silently stop holding.
package layers
