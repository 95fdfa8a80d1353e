package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// An unexpected failure at an OAuth endpoint (a panic the recover
// middleware caught, say) is RFC 6749's server_error, without its cause;
// the same failure elsewhere keeps the error format.
func TestOAuthEndpointServerError(t *testing.T) {
	e := echo.New()
	h := errorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for path, want := range map[string]string{"/api/oauth/token": "server_error", "/api/oauth/revoke": "server_error", "/api/1.0/clients": ""} {
		rec := httptest.NewRecorder()
		h(errors.New("secret cause"), e.NewContext(httptest.NewRequest(http.MethodPost, path, nil), rec))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusInternalServerError {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if want == "" {
			if body["code"] != "internal" || body["error"] != nil {
				t.Fatalf("%s: %v", path, body)
			}
			continue
		}
		if body["error"] != want || body["error_description"] == "" || body["message"] != nil || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %v (Cache-Control %q)", path, body, rec.Header().Get("Cache-Control"))
		}
		if s := rec.Body.String(); strings.Contains(s, "secret cause") {
			t.Fatalf("%s: the cause leaks: %s", path, s)
		}
	}
}
