package httpapi

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/openapi"
	"github.com/finsvc/finsvc/pkg/apperr"
	"github.com/finsvc/finsvc/pkg/auth"
)

// Authorization has one home: this middleware, keyed by operation. The
// scopes an operation needs are read from its `security` entry in the
// embedded spec, so the published contract and the enforced rule cannot
// drift apart; what the spec cannot say (which role may do it) is the table
// below. It runs after bearer authentication and request validation, so a
// malformed request is a 400 whoever sends it, as before.

// role is what a caller's role must allow for an operation; doing, when
// set, names the action in the 403 ("role viewer may not list users").
type role struct {
	action auth.Action
	doing  string
}

// roles maps every operation of the JSON API (spec operationId) to the role
// it needs. An operation missing here makes New fail: a new endpoint cannot
// ship without someone deciding who may call it.
var roles = map[string]role{
	"getMe":      {action: auth.Read},
	"listUsers":  {action: auth.Admin, doing: "list users"},
	"getUser":    {action: auth.Admin, doing: "read users"},
	"createUser": {action: auth.Admin, doing: "create users"},
	"updateUser": {action: auth.Admin, doing: "change users"},
	"deleteUser": {action: auth.Admin, doing: "deactivate users"},

	"listClients":        {action: auth.Read},
	"listDeletedClients": {action: auth.Read},
	"listDeletedActs":    {action: auth.Read},
	"getClient":          {action: auth.Read},
	"createClient":       {action: auth.Write},
	"updateClient":       {action: auth.Write},
	"deleteClient":       {action: auth.Write},

	"listTemplates":  {action: auth.Read},
	"getTemplate":    {action: auth.Read},
	"createTemplate": {action: auth.Admin},
	"updateTemplate": {action: auth.Admin},

	"listActs":           {action: auth.Read},
	"getAct":             {action: auth.Read},
	"getLatestClientAct": {action: auth.Read},
	"listActHistory":     {action: auth.Read},
	"createAct":          {action: auth.Write},
	"updateAct":          {action: auth.Write},
	"deleteAct":          {action: auth.Write},
	"finalizeAct":        {action: auth.Write},
	"duplicateAct":       {action: auth.Write},
	"createFetchRequest": {action: auth.Write},
	"getFetchRequest":    {action: auth.Read},
	"putActData":         {action: auth.Write},
	"putActDataPoint":    {action: auth.Write},

	"listWebhooks":             {action: auth.Read},
	"getWebhook":               {action: auth.Read},
	"listWebhookDeliveries":    {action: auth.Read},
	"createWebhook":            {action: auth.Write},
	"updateWebhook":            {action: auth.Write},
	"deleteWebhook":            {action: auth.Write},
	"rotateWebhookSecret":      {action: auth.Write},
	"redeliverWebhookDelivery": {action: auth.Write},
	"testWebhook":              {action: auth.Write},
	"listEventTypes":           {action: auth.Read},
	"issueOneTimePassword":     {action: auth.Admin, doing: "issue one-time passwords"},
}

// Rule is what one operation needs: the spec's scopes and the table's role.
type Rule struct {
	OperationID string // as in the spec (createAct)
	Scopes      []string
	Action      auth.Action
	doing       string
}

// Rules reads the authorization rule of every operation the strict server
// routes (keyed by its Go name, CreateAct, which is what the strict
// middleware is told). It fails when an operation is missing from the spec
// or the role table, when the table names an operation the server does not
// have, or when a security requirement is not one oauth2 scope list.
func Rules() (map[string]Rule, error) {
	spec, err := openapi.Load()
	if err != nil {
		return nil, err
	}
	return rulesFrom(spec, roles)
}

func rulesFrom(spec *openapi3.T, roles map[string]role) (map[string]Rule, error) {
	byGoName := map[string]*openapi3.Operation{}
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID != "" {
				byGoName[goName(op.OperationID)] = op
			}
		}
	}
	var errs []error
	rules := map[string]Rule{}
	seen := map[string]bool{}
	iface := reflect.TypeFor[apiserver.StrictServerInterface]()
	for i := range iface.NumMethod() {
		name := iface.Method(i).Name
		op, ok := byGoName[name]
		if !ok {
			errs = append(errs, fmt.Errorf("operation %s: not in the spec", name))
			continue
		}
		seen[op.OperationID] = true
		r, ok := roles[op.OperationID]
		if !ok {
			errs = append(errs, fmt.Errorf("operation %s: no role in the authorization table (httpapi/authorize.go)", op.OperationID))
			continue
		}
		sec := op.Security
		if sec == nil {
			sec = &spec.Security
		}
		scopes, err := oauthScopes(*sec)
		if err != nil {
			errs = append(errs, fmt.Errorf("operation %s: %w", op.OperationID, err))
			continue
		}
		rules[name] = Rule{OperationID: op.OperationID, Scopes: scopes, Action: r.action, doing: r.doing}
	}
	for id := range roles {
		if !seen[id] {
			errs = append(errs, fmt.Errorf("authorization table: %s is not an operation of the API", id))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("httpapi: authorization: %w", err)
	}
	return rules, nil
}

// oauthScopes accepts the one shape the API uses: a single requirement on
// the oauth2 scheme (its scopes all needed; none means any valid token).
// Alternatives (several requirements) or no requirement at all would need
// rules this middleware does not have, so they are refused at startup.
func oauthScopes(sec openapi3.SecurityRequirements) ([]string, error) {
	if len(sec) != 1 {
		return nil, fmt.Errorf("want exactly one security requirement, got %d", len(sec))
	}
	req := sec[0]
	scopes, ok := req["oauth2"]
	if !ok || len(req) != 1 {
		return nil, errors.New("the security requirement must name the oauth2 scheme alone")
	}
	return slices.Clone(scopes), nil
}

// goName is the Go name oapi-codegen gives an operation id (createAct →
// CreateAct). An id it would spell otherwise fails Rules, not a request.
func goName(id string) string {
	if id == "" {
		return ""
	}
	return strings.ToUpper(id[:1]) + id[1:]
}

// authorizer is the strict middleware that enforces the Rules of spec.
func authorizer(spec *openapi3.T) (apiserver.StrictMiddlewareFunc, error) {
	rules, err := rulesFrom(spec, roles)
	if err != nil {
		return nil, err
	}
	return func(next apiserver.StrictHandlerFunc, operationID string) apiserver.StrictHandlerFunc {
		r, ok := rules[operationID]
		if !ok { // unreachable: Rules covers every method of the interface
			return func(echo.Context, any) (any, error) {
				return nil, fmt.Errorf("httpapi: no authorization rule for %s", operationID)
			}
		}
		return func(c echo.Context, req any) (any, error) {
			p, ok := auth.FromContext(c.Request().Context())
			if !ok {
				return nil, apperr.E(apperr.Unauthenticated, "authentication required")
			}
			if err := p.Permit(r.Scopes, r.Action, r.doing); err != nil {
				return nil, err
			}
			return next(c, req)
		}
	}, nil
}

// PermitRole checks the role half of operationID's rule (a spec
// operationId) for p. The console pages (pkg/webui) call it: a signed-in
// user acts with their role and no app's scopes, under the same table as
// the API.
func PermitRole(p *auth.Principal, operationID string) error {
	r, ok := roles[operationID]
	if !ok {
		return fmt.Errorf("httpapi: no role for the operation %s", operationID)
	}
	return p.Permit(nil, r.action, r.doing)
}
