//go:build tools

// Package tools records the code generators this module pins. Go 1.24+ also
// lists them in go.mod's tool directive, which is what `go tool` runs.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
