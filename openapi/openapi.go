// Package openapi embeds the published contract, openapi/finsvc.yaml, byte
// for byte as it is committed, so that /openapi.yaml serves exactly the file
// integrators generate from, and the validators load the same bytes.
package openapi

import (
	_ "embed"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// Document is finsvc.yaml.
//
//go:embed finsvc.yaml
var Document []byte

// Load parses Document into a fresh kin-openapi document (callers may
// change their copy, for example drop its servers).
func Load() (*openapi3.T, error) {
	spec, err := openapi3.NewLoader().LoadFromData(Document)
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	return spec, nil
}
