package finsvc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/finsvc/finsvc/clients/go/finsvc"
)

// echoClient answers a POST /clients with a 201 whose client carries the
// credit_limit literal exactly as it arrived in the request body, and keeps
// the body it was sent.
type echoClient struct{ sent []byte }

func (e *echoClient) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	e.sent = body
	var in map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	out := `{"id":1,"company_name":"X","org_number":"1","country":"NO","credit_limit":` + string(in["credit_limit"]) +
		`,"created_at":"2026-01-05T09:30:00Z","updated_at":"2026-01-05T09:30:00Z"}`
	return &http.Response{
		StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(out)),
	}, nil
}

// The largest amount the service stores, and the smallest step above zero,
// go out as the same number literal and come back with the same digits: no
// float64 on the way (a float64 reads the first as 1e18).
func TestMoneyRoundTripIsExact(t *testing.T) {
	ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok"})
	for _, amount := range []string{"999999999999999999.99", "1234567.89", "0.01", "0"} {
		rt := &echoClient{}
		c, err := finsvc.New("https://finsvc.example.com", "acme", ts, finsvc.WithTransport(rt))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.CreateClientWithResponse(context.Background(), nil, finsvc.ClientCreate{
			CompanyName: "X", OrgNumber: "1", Country: "NO", CreditLimit: finsvc.Decimal(amount),
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := []byte(`"credit_limit":` + amount); !bytes.Contains(rt.sent, want) {
			t.Errorf("%s: sent %s, want it to contain %s", amount, rt.sent, want)
		}
		if resp.JSON201 == nil {
			t.Fatalf("%s: no 201 body: %s", amount, resp.Body)
		}
		if got := resp.JSON201.CreditLimit; got.String() != amount {
			t.Errorf("%s: read back %s", amount, got)
		}
		// Sent on again (an update) it is still the same literal.
		b, err := json.Marshal(finsvc.ClientUpdate{CreditLimit: &resp.JSON201.CreditLimit})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"credit_limit":` + amount + `}`; string(b) != want {
			t.Errorf("%s: update body %s, want %s", amount, b, want)
		}
	}
}

// A Decimal that is not a number literal is refused before anything is sent.
func TestMoneyRefusesText(t *testing.T) {
	if _, err := json.Marshal(finsvc.ClientUpdate{CreditLimit: ptr(finsvc.Decimal("12,50"))}); err == nil {
		t.Error("12,50 marshalled")
	}
}

func ptr[T any](v T) *T { return &v }
