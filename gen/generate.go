// Package gen holds code generated from openapi/finsvc.yaml. Never edit the
// generated files: change the spec and run `go generate ./gen/...`.
package gen

//go:generate go tool oapi-codegen -config ../openapi/models.cfg.yaml ../openapi/finsvc.yaml
//go:generate go tool oapi-codegen -config ../openapi/client.cfg.yaml ../openapi/finsvc.yaml
//go:generate go tool oapi-codegen -config ../openapi/spec.cfg.yaml ../openapi/finsvc.yaml
//go:generate go tool oapi-codegen -config ../openapi/server.cfg.yaml ../openapi/finsvc.yaml
