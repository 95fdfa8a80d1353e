// Package docs serves the API reference page at /docs: Redoc, vendored from
// npm (redoc@2.5.4, bundles/redoc.standalone.js, MIT, licence files beside
// it in assets/), rendering the service's own /openapi.yaml. Nothing is
// loaded from a CDN; the page's Content-Security-Policy forbids it.
//
// To update Redoc: `npm pack redoc@2`, copy bundles/redoc.standalone.js and
// its .LICENSE.txt plus LICENSE (as REDOC-LICENSE) into assets/, and note
// the version here and in assets/VERSION.
package docs

import (
	"bytes"
	"embed"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/openapi"
)

//go:embed assets/redoc.standalone.js assets/redoc.standalone.js.LICENSE.txt assets/REDOC-LICENSE assets/VERSION
var assets embed.FS

// remoteLogo is the one remote resource the bundle loads on its own: the
// "API docs by Redocly" logo, an unconditional <img> from Redocly's CDN.
// The vendored file stays byte-for-byte npm's (checkable against the sha256
// in assets/VERSION); the URL is rewritten when served to an empty data: URI,
// whose load error makes Redoc drop the image.
const remoteLogo = "https://cdn.redoc.ly/redoc/logo-mini.svg"

var bundle = sync.OnceValue(func() []byte {
	b, err := assets.ReadFile("assets/redoc.standalone.js")
	if err != nil {
		panic("docs: embedded bundle missing: " + err.Error())
	}
	return bytes.ReplaceAll(b, []byte(remoteLogo), []byte("data:,"))
})

// page is the reference page. The spec comes from the same origin
// (/openapi.yaml, or /docs/assets/openapi.yaml when a server URL is set), so the
// page always documents the running build.
const page = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>finsvc API reference</title>
<link rel="icon" href="data:,">
<style>body { margin: 0; padding: 0; }
.console { margin: 0; padding: .5rem 1rem; font: 14px/1.4 system-ui, sans-serif; background: #172033; color: #dbe4f3; }
.console a { color: #fff; font-weight: 600; }</style>
</head>
<body>
<p class="console" id="console-link"><a href="{{console}}">Open the tenant console</a>: webhooks and their deliveries, acts and users, for the signed-in people of an organization, on the organization's own address.</p>
<redoc spec-url="{{spec}}" hide-download-button="false"></redoc>
<script src="/docs/assets/redoc.standalone.js"></script>
</body>
</html>
`

// csp allows only this origin. Redoc injects its styles at runtime
// (styled-components: 'unsafe-inline' styles) and runs its search index in
// a blob: worker.
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// files are the assets served below /docs/assets/, with their types.
var files = map[string]string{
	"redoc.standalone.js":             "text/javascript; charset=utf-8",
	"redoc.standalone.js.LICENSE.txt": "text/plain; charset=utf-8",
	"REDOC-LICENSE":                   "text/plain; charset=utf-8",
	"VERSION":                         "text/plain; charset=utf-8",
}

// serversBlock is the document's top-level servers entry, up to the next
// top-level key.
var serversBlock = regexp.MustCompile(`(?ms)^servers:\n.*?^(\S)`)

// sampleBase is the host the document's curl samples address.
const sampleBase = "https://demo.finsvc.example"

// withServer is the published document with serverURL as its only server
// and as the address of its curl samples: what a reader of this instance's
// /docs (the demo's, say) can call as shown.
func withServer(doc []byte, serverURL string) []byte {
	block := "servers:\n  - url: " + serverURL + "\n    description: This instance's tenant.\n"
	out := serversBlock.ReplaceAll(doc, []byte(strings.ReplaceAll(block, "$", "$$")+"$1"))
	return bytes.ReplaceAll(out, []byte(sampleBase), []byte(serverURL))
}

// Register adds GET /docs and GET /docs/assets/:name to e. Both are
// operational paths: they answer on any host, without a tenant. With a
// serverURL (the demo passes its tenant's URL) the page documents that
// server, from GET /docs/assets/openapi.yaml; otherwise it reads /openapi.yaml,
// whose servers entry is the tenant URL template.
func Register(e *echo.Echo, serverURL string) {
	spec := "/openapi.yaml"
	if serverURL != "" {
		spec = "/docs/assets/openapi.yaml"
		doc := withServer(openapi.Document, strings.TrimRight(serverURL, "/"))
		e.GET("/docs/assets/openapi.yaml", func(c echo.Context) error {
			c.Response().Header().Set("X-Content-Type-Options", "nosniff")
			c.Response().Header().Set("Cache-Control", "no-cache")
			return c.Blob(http.StatusOK, "application/yaml", doc)
		})
	}
	// The console lives on a tenant's host: this instance's tenant when
	// there is one, else the host the page is read on.
	html := strings.NewReplacer("{{spec}}", spec, "{{console}}", strings.TrimRight(serverURL, "/")+"/console").Replace(page)
	e.GET("/docs", func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		return c.HTML(http.StatusOK, html)
	})
	e.GET("/docs/assets/:name", func(c echo.Context) error {
		name := c.Param("name")
		ct, ok := files[name]
		if !ok {
			return echo.NewHTTPError(http.StatusNotFound, "no such asset")
		}
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return err
		}
		if name == "redoc.standalone.js" {
			b = bundle()
		}
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "public, max-age=86400")
		return c.Blob(http.StatusOK, ct, b)
	})
}
