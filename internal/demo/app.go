package demo

import (
	"fmt"

	"github.com/finsvc/finsvc/internal/oauth"
)

// DemoRedirectURI is the demo app's registered callback: a loopback address
// an integrator's local OAuth client (or the TypeScript smoke) can listen on.
const DemoRedirectURI = "http://127.0.0.1:8765/callback"

// seedApp registers the demo OAuth app with every scope. A re-run keeps the
// client id and issues a fresh secret, since secrets are stored hashed and
// cannot be shown again.
func seedApp(s *Seeder) error {
	id, secret, err := oauth.EnsureApp(s.Ctx, s.DB, "Demo App", []string{DemoRedirectURI}, nil)
	if err != nil {
		return fmt.Errorf("app: %w", err)
	}
	s.Info.ClientID, s.Info.ClientSecret, s.Info.RedirectURI = id, secret, DemoRedirectURI
	return nil
}
