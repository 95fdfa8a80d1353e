package openapi_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/openapi"
)

func load(t *testing.T) *openapi3.T {
	t.Helper()
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
