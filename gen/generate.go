// Package gen holds code generated from openapi/finsvc.yaml. Never edit the
// generated files: change the spec and run `go generate ./gen/...`.
//
//   - gen/models: the wire models (no echo, no kin-openapi), for the domain
//     packages that build event payloads and for the HTTP layer;
//   - gen/apiserver: the strict echo server interface;
//   - gen/apiclient: the Go HTTP client used by tests and tools;
//   - clients/go/finsvc: the installable client, a module of its own with no
//     server types (clients/go/finsvc/oapi-codegen.yaml says how).
//
// The spec itself is embedded once, byte for byte, by package openapi.
package gen

//go:generate go tool oapi-codegen -config ../openapi/models.cfg.yaml ../openapi/finsvc.yaml
//go:generate go tool oapi-codegen -config ../openapi/client.cfg.yaml ../openapi/finsvc.yaml
//go:generate go tool oapi-codegen -config ../openapi/server.cfg.yaml ../openapi/finsvc.yaml
//go:generate go tool oapi-codegen -config ../clients/go/finsvc/oapi-codegen.yaml ../openapi/finsvc.yaml
