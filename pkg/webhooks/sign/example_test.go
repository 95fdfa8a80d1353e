package sign_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/finsvc/finsvc/pkg/webhooks/sign"
)

// receiver is what an integrator writes: read the raw body (bounded), verify
// it before parsing, then acknowledge quickly and do the work asynchronously.
func receiver(secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Verify the exact bytes received; never re-encode JSON first.
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		err = sign.Verify(secret, r.Header.Get("X-Signature"), body, time.Now())
		switch {
		case err == nil:
		case errors.Is(err, sign.ErrTimestampTolerance):
			// Authentic but stale: a replay, or this host's clock is off.
			http.Error(w, "stale signature", http.StatusUnauthorized)
			return
		default:
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		// Deduplicate by the envelope's "id" (also in webhook-id) here,
		// queue the work, and answer at once; finsvc retries non-2xx.
		w.WriteHeader(http.StatusAccepted)
	})
}

// ExampleVerify shows a receiver checking X-Signature. The delivery is signed
// here with sign.Sign to stand in for finsvc.
func ExampleVerify() {
	secret, _ := sign.NewSecret() // in real life: the secret shown at registration
	h := receiver(secret)

	body := `{"id":"0b7e4a52-3d54-4c1e-9a55-2f4a3f3f9a11","event":"act.fetch_data","data":{}}`
	deliver := func(sent string, signedAt time.Time) int {
		req := httptest.NewRequest(http.MethodPost, "https://integrator.example/hooks", strings.NewReader(sent))
		sign.Sign([]string{secret}, "0b7e4a52-3d54-4c1e-9a55-2f4a3f3f9a11", signedAt, []byte(body)).Apply(req.Header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}

	fmt.Println("genuine:", deliver(body, time.Now()))
	fmt.Println("tampered:", deliver(strings.Replace(body, "fetch_data", "created", 1), time.Now()))
	fmt.Println("replayed an hour later:", deliver(body, time.Now().Add(-time.Hour)))
	// Output:
	// genuine: 202
	// tampered: 401
	// replayed an hour later: 401
}

// ExampleVerifyStandard verifies the Standard Webhooks headers instead, for
// receivers that prefer that format (any Standard Webhooks library works too).
func ExampleVerifyStandard() {
	secret, _ := sign.NewSecret()
	body := []byte(`{"id":"0b7e4a52-3d54-4c1e-9a55-2f4a3f3f9a11","event":"act.created","data":{}}`)
	now := time.Now()

	header := http.Header{}
	sign.Sign([]string{secret}, "0b7e4a52-3d54-4c1e-9a55-2f4a3f3f9a11", now, body).Apply(header)

	fmt.Println(sign.VerifyStandard(secret, header, body, now))
	// Output: <nil>
}
