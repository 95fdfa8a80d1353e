package apitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/finsvc/finsvc/openapi"
)

// A second, independent implementation checks every response and every
// webhook payload beside kin-openapi: pb33f's
// libopenapi-validator. Two validators disagreeing is how a construct that
// only one of them accepts (and so only some integrators' tools) shows up
// before an integrator finds it.
var second struct {
	once   sync.Once
	err    error
	v      validator.Validator
	model  *v3.Document
	schema schema_validation.SchemaValidator
}

func secondValidator() error {
	second.once.Do(func() {
		doc, err := libopenapi.NewDocument(openapi.Document)
		if err != nil {
			second.err = fmt.Errorf("libopenapi: load the document: %w", err)
			return
		}
		model, err := doc.BuildV3Model()
		if err != nil {
			second.err = fmt.Errorf("libopenapi: build the model: %w", err)
			return
		}
		second.model = &model.Model
		second.v = validator.NewValidatorFromV3Model(&model.Model)
		second.schema = schema_validation.NewSchemaValidator()
	})
	return second.err
}

// validateResponseSecond checks resp (whose body has been read into body)
// with libopenapi-validator.
func validateResponseSecond(req *http.Request, resp *http.Response, body []byte) error {
	if err := secondValidator(); err != nil {
		return err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		return validateLines(req, body)
	}
	r := *resp
	r.Body = io.NopCloser(bytes.NewReader(body))
	ok, errs := second.v.ValidateHttpResponse(req, &r)
	if ok {
		return nil
	}
	return fmt.Errorf("libopenapi-validator: %s %s → %d: %s", req.Method, req.URL.Path, resp.StatusCode, describe(errs))
}

// lineSchemas names the component schema of each line of the JSON Lines
// responses, which the validators take as one opaque string (the document
// can only declare the media type): every line is checked against it.
var lineSchemas = map[string]string{"/api/1.0/audit-log/export": "AuditRecord"}

func validateLines(req *http.Request, body []byte) error {
	name, ok := lineSchemas[req.URL.Path]
	if !ok {
		return fmt.Errorf("apitest: %s answers JSON Lines, but no line schema is named for it", req.URL.Path)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
		if len(line) == 0 && len(body) == 0 {
			break
		}
		if err := validateEventSecond(name, line); err != nil {
			return fmt.Errorf("%s line %d: %w", req.URL.Path, i+1, err)
		}
	}
	return nil
}

// validateEventSecond checks a delivery body against the component schema
// name with libopenapi-validator (OpenAPI 3.0 rules: the document is 3.0).
func validateEventSecond(name string, body []byte) error {
	if err := secondValidator(); err != nil {
		return err
	}
	proxy, ok := second.model.Components.Schemas.Get(name)
	if !ok || proxy == nil {
		return fmt.Errorf("libopenapi: the document has no schema %s", name)
	}
	if ok, errs := second.schema.ValidateSchemaBytesWithVersion(proxy.Schema(), body, 3.0); !ok {
		return fmt.Errorf("libopenapi-validator: delivery does not match %s: %s", name, describe(errs))
	}
	return nil
}

func describe(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" {
			b.WriteString(" (" + e.Reason + ")")
		}
		for _, f := range e.SchemaValidationErrors {
			b.WriteString(" [" + f.Reason + " at " + f.FieldPath + "]")
		}
	}
	return b.String()
}
