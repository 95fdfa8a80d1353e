package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/openapi"
)

// registerOperational adds the endpoints that answer on any host.
func registerOperational(e *echo.Echo, deps Deps) {
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, models.Health{Status: "ok"})
	})
	e.GET("/readyz", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if deps.DB == nil {
			return c.JSON(http.StatusServiceUnavailable, models.Health{Status: "no database configured"})
		}
		if err := deps.DB.Ping(ctx); err != nil {
			deps.Logger.WarnContext(ctx, "readiness check failed", "error", err)
			return c.JSON(http.StatusServiceUnavailable, models.Health{Status: "database unreachable"})
		}
		return c.JSON(http.StatusOK, models.Health{Status: "ok"})
	})
	e.GET("/openapi.yaml", func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=300")
		return c.Blob(http.StatusOK, "application/yaml", openapi.Document)
	})
}
