package openapi_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsvc/finsvc/openapi"
)

// Every example in the spec (schema examples, media-type example and
// examples, referenced components/examples) validates against its schema:
// kin-openapi's document validation with example validation on.
func TestExamplesValidate(t *testing.T) {
	spec, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatal(err)
	}
}
