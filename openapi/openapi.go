// Package openapi embeds the published contract, openapi/finsvc.yaml, byte
// for byte as it is committed, so that /openapi.yaml serves exactly the file
// integrators generate from, and the validators load the same bytes.
package openapi

import (
	_ "embed"
	"fmt"
	"sync"

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

// Shared is Document parsed once per process, for the readers that never
// change it (the composition root, the validators, the test harness):
// parsing the spec costs a few hundred milliseconds, and a test binary
// builds hundreds of servers. A caller that changes its copy uses Load.
var Shared = sync.OnceValues(Load)
