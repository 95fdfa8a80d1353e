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
	"sync"

	"github.com/labstack/echo/v4"
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

// page is the reference page. The spec comes from /openapi.yaml on the same
// origin, so the page always documents the running build.
const page = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>finsvc API reference</title>
<link rel="icon" href="data:,">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.yaml" hide-download-button="false"></redoc>
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

// Register adds GET /docs and GET /docs/assets/:name to e. Both are
// operational paths: they answer on any host, without a tenant.
func Register(e *echo.Echo) {
	e.GET("/docs", func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		return c.HTML(http.StatusOK, page)
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
