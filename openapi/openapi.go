// Package openapi embeds the published contract, openapi/finsvc.yaml, byte
// for byte as it is committed, so that /openapi.yaml serves exactly the file
// integrators generate from.
package openapi

import _ "embed"

// Document is finsvc.yaml.
//
//go:embed finsvc.yaml
var Document []byte
