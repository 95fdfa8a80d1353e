//go:build tools

// Package tools records the code generators this module pins. Go 1.24+ also
// lists them in go.mod's tool directive, which is what `go tool` runs.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	// The breaking-change gate (openapi/compat) calls oasdiff as a library;
	// `go tool oasdiff changelog openapi/released/<newest> openapi/finsvc.yaml`
	// drafts CHANGELOG.md entries with the same version.
	_ "github.com/oasdiff/oasdiff"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
