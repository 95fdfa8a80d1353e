package httpapi

import (
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/finsvc/finsvc/gen/apiserver"
	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/money"
)

// TestClientBodyIsTheGenerated: for random clients (escapes, invalid
// UTF-8, zones, money at its bounds, times encoding/json refuses) the hand
// writer answers with the generated response's status, headers and bytes.
func TestClientBodyIsTheGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	strs := []string{"", "Acme AB", `"quoted" \ back`, "<b>&</b>", "\x00\b\f\n\r\t\x1f\x7f", "åäö 日本 🙂", "\u2028", "\xff\xc3", strings.Repeat("x", 300)}
	limits := []string{"0", "0.01", "1000.50", "999999999999999999.99", "12"}
	times := []time.Time{{}, time.Now(), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)), time.Unix(1_700_000_000, 123_000_000).UTC()}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	refused := 0
	for i := range 5000 {
		c := models.Client{
			CompanyName: pick(strs), Country: pick(strs), OrgNumber: pick(strs), Id: rng.Int64() - rng.Int64(),
			CreditLimit: money.MustParse(pick(limits)),
			CreatedAt:   times[rng.IntN(len(times))], UpdatedAt: time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("", rng.IntN(100000)-50000)),
		}
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		wantErr := apiserver.GetClient200JSONResponse(c).VisitGetClientResponse(want)
		gotErr := clientBody(c).VisitGetClientResponse(got)
		if (wantErr == nil) != (gotErr == nil) || want.Code != got.Code || want.Body.String() != got.Body.String() ||
			want.Header().Get("Content-Type") != got.Header().Get("Content-Type") || len(want.Header()) != len(got.Header()) {
			t.Fatalf("client %d %+v:\ngenerated %d %v %q (%v)\nclientBody %d %v %q (%v)", i, c,
				want.Code, want.Header(), want.Body, wantErr, got.Code, got.Header(), got.Body, gotErr)
		}
		if wantErr != nil {
			refused++
		}
	}
	if refused == 0 || refused == 5000 {
		t.Fatalf("%d of 5000 refused: the cases miss a path", refused)
	}
}
