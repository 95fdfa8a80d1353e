// Command example is the Go example of docs/clients.md: run it where demo-data/ and
// tokens.json are (steps 1 to 4), in a module that requires the client module.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/clients/go/finsvc"
)

func main() {
	var demo struct {
		BaseURL      string `json:"base_url"`
		Tenant       string `json:"tenant"`
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		RedirectURI  string `json:"redirect_uri"`
	}
	var tok oauth2.Token // access_token, refresh_token; without an expiry it is used until refused
	readJSON("demo-data/demo.json", &demo)
	readJSON("tokens.json", &tok)

	// Demo only: Go's resolver may not send *.localhost to loopback, so token
	// requests (Exchange, refreshes) dial 127.0.0.1; finsvc.New does the same
	// for API calls. A real deployment has DNS and needs neither.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, finsvc.LocalhostClient())
	conf := &oauth2.Config{
		ClientID: demo.ClientID, ClientSecret: demo.ClientSecret, RedirectURL: demo.RedirectURI,
		Scopes: []string{"acts:read", "acts:write", "webhooks:read", "webhooks:write", "offline_access"},
		Endpoint: oauth2.Endpoint{
			AuthURL:  demo.BaseURL + "/oauth/authorize",
			TokenURL: demo.BaseURL + "/api/oauth/token",
		},
	}
	// Steps 3 and 4 with oauth2 instead of curl (state and PKCE):
	//   verifier := oauth2.GenerateVerifier()
	//   authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)) // send the user here
	//   tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))     // code from the callback
	c, err := finsvc.New(demo.BaseURL, demo.Tenant, conf.TokenSource(ctx, &tok))
	if err != nil {
		log.Fatal(err)
	}
	limit := 1
	list, err := c.ListActsWithResponse(ctx, &finsvc.ListActsParams{Limit: &limit})
	if err != nil {
		log.Fatal(err)
	}
	if list.JSON200 == nil || len(list.JSON200.Data) == 0 {
		log.Fatalf("GET /acts: %s %s", list.Status(), list.Body)
	}
	act, err := c.GetActWithResponse(ctx, list.JSON200.Data[0].Uuid) // act.JSON200, act.JSON404, …
	if err != nil {
		log.Fatal(err)
	}
	if act.JSON200 == nil {
		log.Fatalf("GET /acts/{act_uuid}: %s %s", act.Status(), act.Body)
	}
	fmt.Printf("act %q (%s) with %d data points\n", act.JSON200.Title, act.JSON200.Status, len(act.JSON200.Data))
}

func readJSON(path string, v any) {
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		log.Fatal(err)
	}
}
