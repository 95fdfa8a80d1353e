package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/testdb"
)

// BenchmarkKeyedPost measures what an Idempotency-Key costs POST /clients,
// end to end over loopback HTTP (no response validation): without a key,
// with a new key each time (the first request), and a replay of one key.
//
//	go test -run '^$' -bench BenchmarkKeyedPost -benchtime 2000x -count 3 ./internal/httpapi/
func BenchmarkKeyedPost(b *testing.B) {
	for _, dialect := range testdb.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			env := apitest.New(b, apitest.WithDB(testdb.Open(b, dialect)))
			acme := env.Tenant("acme")
			tok := acme.Token(acme.User(auth.RoleMember), auth.ScopeClientsWrite)
			client := env.Server.Client()
			body, _ := json.Marshal(nordic)
			post := func(key string) {
				req, _ := http.NewRequest("POST", env.Server.URL+"/api/1.0/clients", bytes.NewReader(body))
				req.Host = acme.Host
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				if key != "" {
					req.Header.Set("Idempotency-Key", key)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			b.Run("no-key", func(b *testing.B) {
				for b.Loop() {
					post("")
				}
			})
			b.Run("new-key", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					post("bench-" + strconv.Itoa(i) + "-" + strconv.Itoa(b.N))
				}
			})
			b.Run("replay", func(b *testing.B) {
				post("bench-replay")
				for b.Loop() {
					post("bench-replay")
				}
			})
		})
	}
}
