package sign

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	testEventID = "0b7e4a52-3d54-4c1e-9a55-2f4a3f3f9a11"
	testBody    = `{"id":"0b7e4a52-3d54-4c1e-9a55-2f4a3f3f9a11","event":"act.fetch_data","data":{}}`
)

var testTime = time.Unix(1_700_000_000, 0)

func mustSecret(t testing.TB) string {
	t.Helper()
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewSecretFormat(t *testing.T) {
	a, b := mustSecret(t), mustSecret(t)
	if a == b {
		t.Fatal("two secrets are equal")
	}
	for _, s := range []string{a, b} {
		if !strings.HasPrefix(s, "whsec_") {
			t.Fatalf("secret %q lacks whsec_ prefix", s)
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(raw) != 32 {
			t.Fatalf("secret %q: decoded %d bytes, err %v; want 32 bytes", s, len(raw), err)
		}
		if err := CheckSecret(s); err != nil {
			t.Fatalf("CheckSecret(%q) = %v", s, err)
		}
	}
	if err := CheckSecret("whsec_not base64!"); !errors.Is(err, ErrInvalidSecret) {
		t.Fatalf("CheckSecret(bad) = %v, want ErrInvalidSecret", err)
	}
}

// TestSignKnownVector pins the exact wire format against an HMAC computed
// independently here, so a refactor cannot silently change what integrators
// have to verify.
func TestSignKnownVector(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	h := Sign([]string{secret}, testEventID, testTime.Add(900*time.Millisecond), []byte(testBody))

	m := hmac.New(sha256.New, []byte(secret)) // the whole string, prefix included
	m.Write([]byte("1700000000." + testBody))
	wantSig := "t=1700000000,v1=" + hex.EncodeToString(m.Sum(nil))
	if h.Signature != wantSig {
		t.Errorf("Signature = %q\nwant        %q", h.Signature, wantSig)
	}

	m = hmac.New(sha256.New, bytes.Repeat([]byte{7}, 32)) // decoded key
	m.Write([]byte(testEventID + ".1700000000." + testBody))
	wantStd := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	if h.WebhookSignature != wantStd {
		t.Errorf("WebhookSignature = %q, want %q", h.WebhookSignature, wantStd)
	}
	if h.WebhookID != testEventID || h.WebhookTimestamp != "1700000000" {
		t.Errorf("id/timestamp = %q/%q", h.WebhookID, h.WebhookTimestamp)
	}

	hdr := http.Header{}
	h.Apply(hdr)
	for name, want := range map[string]string{
		"X-Signature":       wantSig,
		"webhook-id":        testEventID,
		"webhook-timestamp": "1700000000",
		"webhook-signature": wantStd,
	} {
		if got := hdr.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	secret := mustSecret(t)
	body := []byte(testBody)
	h := Sign([]string{secret}, testEventID, testTime, body)
	if err := Verify(secret, h.Signature, body, testTime); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	hdr := http.Header{}
	h.Apply(hdr)
	if err := VerifyStandard(secret, hdr, body, testTime); err != nil {
		t.Fatalf("VerifyStandard: %v", err)
	}
	// Empty bodies are legal and still signed.
	h = Sign([]string{secret}, testEventID, testTime, nil)
	if err := Verify(secret, h.Signature, []byte{}, testTime); err != nil {
		t.Fatalf("Verify(empty body): %v", err)
	}
}

func TestTamperedBody(t *testing.T) {
	secret := mustSecret(t)
	body := []byte(testBody)
	h := Sign([]string{secret}, testEventID, testTime, body)
	hdr := http.Header{}
	h.Apply(hdr)

	for name, tampered := range map[string][]byte{
		"flipped byte":   append([]byte("X"), body[1:]...),
		"appended":       append(append([]byte{}, body...), ' '),
		"truncated":      body[:len(body)-1],
		"re-encoded":     []byte(strings.ReplaceAll(testBody, ":", ": ")),
		"empty":          nil,
		"only timestamp": []byte("1700000000." + testBody),
	} {
		t.Run(name, func(t *testing.T) {
			if err := Verify(secret, h.Signature, tampered, testTime); !errors.Is(err, ErrInvalidSignature) {
				t.Errorf("Verify = %v, want ErrInvalidSignature", err)
			}
			if err := VerifyStandard(secret, hdr, tampered, testTime); !errors.Is(err, ErrInvalidSignature) {
				t.Errorf("VerifyStandard = %v, want ErrInvalidSignature", err)
			}
		})
	}

	// The signed timestamp and event id are part of the message too.
	moved := strings.Replace(h.Signature, "t=1700000000", "t=1700000001", 1)
	if err := Verify(secret, moved, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("Verify(changed t) = %v, want ErrInvalidSignature", err)
	}
	hdr2 := hdr.Clone()
	hdr2.Set(HeaderWebhookID, "another-event")
	if err := VerifyStandard(secret, hdr2, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("VerifyStandard(changed id) = %v, want ErrInvalidSignature", err)
	}
}

func TestWrongSecret(t *testing.T) {
	secret, other := mustSecret(t), mustSecret(t)
	body := []byte(testBody)
	h := Sign([]string{secret}, testEventID, testTime, body)
	hdr := http.Header{}
	h.Apply(hdr)
	if err := Verify(other, h.Signature, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("Verify = %v, want ErrInvalidSignature", err)
	}
	if err := VerifyStandard(other, hdr, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("VerifyStandard = %v, want ErrInvalidSignature", err)
	}
	if err := VerifyAny([]string{other}, h.Signature, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("VerifyAny = %v, want ErrInvalidSignature", err)
	}
	if err := VerifyAny(nil, h.Signature, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("VerifyAny(no secrets) = %v, want ErrInvalidSignature", err)
	}
	if err := VerifyStandard("whsec_***", hdr, body, testTime); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("VerifyStandard(bad secret) = %v, want ErrInvalidSecret", err)
	}
}

func TestRotation(t *testing.T) {
	oldSecret, newSecret, stranger := mustSecret(t), mustSecret(t), mustSecret(t)
	body := []byte(testBody)
	h := Sign([]string{newSecret, oldSecret}, testEventID, testTime, body)

	if got := strings.Count(h.Signature, ",v1="); got != 2 {
		t.Fatalf("X-Signature has %d v1 values, want 2: %s", got, h.Signature)
	}
	if !strings.HasPrefix(h.Signature, "t=1700000000,v1=") {
		t.Fatalf("X-Signature = %s", h.Signature)
	}
	if parts := strings.Split(h.WebhookSignature, " "); len(parts) != 2 ||
		!strings.HasPrefix(parts[0], "v1,") || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("webhook-signature = %q, want two space-separated v1 entries", h.WebhookSignature)
	}

	hdr := http.Header{}
	h.Apply(hdr)
	for name, s := range map[string]string{"new": newSecret, "old": oldSecret} {
		if err := Verify(s, h.Signature, body, testTime); err != nil {
			t.Errorf("Verify(%s) = %v", name, err)
		}
		if err := VerifyStandard(s, hdr, body, testTime); err != nil {
			t.Errorf("VerifyStandard(%s) = %v", name, err)
		}
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.VerifyIgnoringTimestamp(body, hdr); err != nil {
			t.Errorf("standardwebhooks(%s) = %v", name, err)
		}
	}
	if err := Verify(stranger, h.Signature, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("Verify(stranger) = %v, want ErrInvalidSignature", err)
	}

	// A receiver that rotates on its side holds several secrets.
	single := Sign([]string{oldSecret}, testEventID, testTime, body)
	if err := VerifyAny([]string{newSecret, oldSecret}, single.Signature, body, testTime); err != nil {
		t.Errorf("VerifyAny = %v", err)
	}
	if err := VerifyAny([]string{stranger}, single.Signature, body, testTime); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("VerifyAny(stranger) = %v, want ErrInvalidSignature", err)
	}
}

func TestTimestampTolerance(t *testing.T) {
	secret := mustSecret(t)
	body := []byte(testBody)
	h := Sign([]string{secret}, testEventID, testTime, body)
	hdr := http.Header{}
	h.Apply(hdr)

	tests := []struct {
		name string
		skew time.Duration // now - signing time
		ok   bool
	}{
		{"same second", 0, true},
		{"receiver 5m ahead (edge)", 5 * time.Minute, true},
		{"receiver 5m behind (edge)", -5 * time.Minute, true},
		{"receiver 5m1s ahead: stale", 5*time.Minute + time.Second, false},
		{"receiver 5m1s behind: from the future", -5*time.Minute - time.Second, false},
		{"replay a day later", 24 * time.Hour, false},
		{"an hour in the future", -time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := testTime.Add(tc.skew)
			errs := map[string]error{
				"Verify":         Verify(secret, h.Signature, body, now),
				"VerifyStandard": VerifyStandard(secret, hdr, body, now),
			}
			for fn, err := range errs {
				if tc.ok && err != nil {
					t.Errorf("%s = %v, want nil", fn, err)
				}
				if !tc.ok && !errors.Is(err, ErrTimestampTolerance) {
					t.Errorf("%s = %v, want ErrTimestampTolerance", fn, err)
				}
			}
		})
	}
}

// TestSignatureCheckedBeforeTimestamp: a forged, stale delivery must report
// the forgery, so ErrTimestampTolerance only ever describes authentic traffic.
func TestSignatureCheckedBeforeTimestamp(t *testing.T) {
	h := Sign([]string{mustSecret(t)}, testEventID, testTime, []byte(testBody))
	err := Verify(mustSecret(t), h.Signature, []byte(testBody), testTime.Add(time.Hour))
	if !errors.Is(err, ErrInvalidSignature) {
		t.Fatalf("Verify = %v, want ErrInvalidSignature", err)
	}
}

func TestVerifyMalformedHeader(t *testing.T) {
	secret := mustSecret(t)
	body := []byte(testBody)
	good := Sign([]string{secret}, testEventID, testTime, body).Signature
	v1 := strings.TrimPrefix(good, "t=1700000000,v1=")
	ts := "t=1700000000"

	tests := []struct {
		name   string
		header string
		want   error
	}{
		{"empty", "", ErrNoSignature},
		{"only t", ts, ErrNoSignature},
		{"only unknown scheme", ts + ",v0=abc", ErrNoSignature},
		{"missing t", "v1=" + v1, ErrMalformedHeader},
		{"duplicate t", ts + "," + ts + ",v1=" + v1, ErrMalformedHeader},
		{"t not numeric", "t=abc,v1=" + v1, ErrMalformedHeader},
		{"t negative", "t=-1700000000,v1=" + v1, ErrMalformedHeader},
		{"t with plus", "t=+1700000000,v1=" + v1, ErrMalformedHeader},
		{"t fractional", "t=1700000000.5,v1=" + v1, ErrMalformedHeader},
		{"t huge", "t=99999999999999999999,v1=" + v1, ErrMalformedHeader},
		{"t empty", "t=,v1=" + v1, ErrMalformedHeader},
		{"v1 empty", ts + ",v1=", ErrMalformedHeader},
		{"v1 uppercase hex", ts + ",v1=" + strings.ToUpper(v1), ErrMalformedHeader},
		{"v1 short", ts + ",v1=" + v1[:63], ErrMalformedHeader},
		{"v1 long", ts + ",v1=" + v1 + "00", ErrMalformedHeader},
		{"v1 not hex", ts + ",v1=" + strings.Repeat("z", 64), ErrMalformedHeader},
		{"v1 base64", ts + ",v1=" + base64.StdEncoding.EncodeToString([]byte(v1[:32])), ErrMalformedHeader},
		{"space after comma", ts + ", v1=" + v1, ErrMalformedHeader},
		{"space around equals", ts + ",v1 = " + v1, ErrMalformedHeader},
		{"trailing comma", good + ",", ErrMalformedHeader},
		{"leading comma", "," + good, ErrMalformedHeader},
		{"double comma", ts + ",,v1=" + v1, ErrMalformedHeader},
		{"no equals", ts + ",v1" + v1, ErrMalformedHeader},
		{"semicolon separated", ts + ";v1=" + v1, ErrMalformedHeader},
		{"uppercase key", "T=1700000000,v1=" + v1, ErrMalformedHeader},
		{"unknown key with space", good + ",v2=a b", ErrMalformedHeader},
		{"Standard Webhooks form", "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32)), ErrMalformedHeader},
		{"one good one malformed v1", good + ",v1=xyz", ErrMalformedHeader},
		{"well-formed but wrong", ts + ",v1=" + strings.Repeat("0", 64), ErrInvalidSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(secret, tc.header, body, testTime)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify(%q) = %v, want %v", tc.header, err, tc.want)
			}
			// Exactly one sentinel must match, so callers can switch on them.
			n := 0
			for _, s := range []error{ErrNoSignature, ErrInvalidSignature, ErrTimestampTolerance, ErrMalformedHeader} {
				if errors.Is(err, s) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("error %v matches %d sentinels, want 1", err, n)
			}
		})
	}

	// Unknown, well-formed schemes are skipped, in any position.
	for _, h := range []string{good + ",v2=future", "v0=legacy," + good, ts + ",v9=x,v1=" + v1} {
		if err := Verify(secret, h, body, testTime); err != nil {
			t.Errorf("Verify(%q) = %v, want nil", h, err)
		}
	}
}

func TestVerifyStandardMalformed(t *testing.T) {
	secret := mustSecret(t)
	body := []byte(testBody)
	hs := Sign([]string{secret}, testEventID, testTime, body)
	base := http.Header{}
	hs.Apply(base)

	tests := []struct {
		name  string
		edit  func(h http.Header)
		want  error
		valid bool
	}{
		{"missing id", func(h http.Header) { h.Del(HeaderWebhookID) }, ErrMalformedHeader, false},
		{"missing timestamp", func(h http.Header) { h.Del(HeaderWebhookTimestamp) }, ErrMalformedHeader, false},
		{"timestamp not numeric", func(h http.Header) { h.Set(HeaderWebhookTimestamp, "soon") }, ErrMalformedHeader, false},
		{"timestamp negative", func(h http.Header) { h.Set(HeaderWebhookTimestamp, "-1") }, ErrMalformedHeader, false},
		{"missing signature", func(h http.Header) { h.Del(HeaderWebhookSignature) }, ErrNoSignature, false},
		{"only other versions", func(h http.Header) { h.Set(HeaderWebhookSignature, "v1a,abc v2,def") }, ErrNoSignature, false},
		{"entry without comma", func(h http.Header) { h.Set(HeaderWebhookSignature, "v1") }, ErrMalformedHeader, false},
		{"double space", func(h http.Header) { h.Set(HeaderWebhookSignature, hs.WebhookSignature+"  v1a,x") }, ErrMalformedHeader, false},
		{"v1 not base64", func(h http.Header) { h.Set(HeaderWebhookSignature, "v1,!!!") }, ErrMalformedHeader, false},
		{"v1 wrong length", func(h http.Header) {
			h.Set(HeaderWebhookSignature, "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 16)))
		}, ErrMalformedHeader, false},
		{"v1 wrong value", func(h http.Header) {
			h.Set(HeaderWebhookSignature, "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
		}, ErrInvalidSignature, false},
		{"other version next to v1", func(h http.Header) { h.Set(HeaderWebhookSignature, "v1a,xyz "+hs.WebhookSignature) }, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := base.Clone()
			tc.edit(h)
			err := VerifyStandard(secret, h, body, testTime)
			if tc.valid {
				if err != nil {
					t.Fatalf("VerifyStandard = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("VerifyStandard = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestStandardWebhooksLibraryCompat is the point of the webhook-* headers:
// the reference Go verifier accepts them unchanged, for one secret and for a
// rotation pair. The library checks against the real clock, so sign at now.
func TestStandardWebhooksLibraryCompat(t *testing.T) {
	secret := mustSecret(t)
	body := []byte(testBody)
	now := time.Now()

	h := http.Header{}
	Sign([]string{secret}, testEventID, now, body).Apply(h)

	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Fatalf("standardwebhooks Verify: %v", err)
	}
	if err := wh.Verify(append([]byte(nil), body[:len(body)-1]...), h); err == nil {
		t.Fatal("standardwebhooks accepted a tampered body")
	}

	// The library's own signature is byte-for-byte what we produce.
	libSig, err := wh.Sign(testEventID, now, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get(HeaderWebhookSignature); got != libSig {
		t.Fatalf("webhook-signature = %q, library signs %q", got, libSig)
	}

	// And our VerifyStandard accepts what the library signs.
	h2 := http.Header{}
	h2.Set(HeaderWebhookID, testEventID)
	h2.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	h2.Set(HeaderWebhookSignature, libSig)
	if err := VerifyStandard(secret, h2, body, now); err != nil {
		t.Fatalf("VerifyStandard(library-signed) = %v", err)
	}

	// Stale deliveries are refused by the library too.
	old := http.Header{}
	Sign([]string{secret}, testEventID, now.Add(-10*time.Minute), body).Apply(old)
	if err := wh.Verify(body, old); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
		t.Fatalf("standardwebhooks Verify(stale) = %v, want ErrMessageTooOld", err)
	}
}

func TestApplyReplacesAndClears(t *testing.T) {
	h := http.Header{}
	h.Set(HeaderSignature, "stale")
	h.Set(HeaderWebhookSignature, "stale")
	// A secret that cannot be decoded produces no Standard signature, and
	// Apply must not leave a previous attempt's value behind.
	s := Sign([]string{"legacy-raw-secret"}, testEventID, testTime, []byte(testBody))
	if s.WebhookSignature != "" {
		t.Fatalf("WebhookSignature = %q, want empty", s.WebhookSignature)
	}
	s.Apply(h)
	if h.Get(HeaderSignature) == "stale" || h.Values(HeaderWebhookSignature) != nil {
		t.Fatalf("Apply left stale headers: %v", h)
	}
	if err := Verify("legacy-raw-secret", h.Get(HeaderSignature), []byte(testBody), testTime); err != nil {
		t.Fatalf("Verify(raw secret) = %v", err)
	}
}

func BenchmarkSign4KiB(b *testing.B) {
	secret := mustSecret(b)
	body := bytes.Repeat([]byte("a"), 4096)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Sign([]string{secret}, testEventID, testTime, body)
	}
}

func BenchmarkSign4KiBRotation(b *testing.B) {
	secrets := []string{mustSecret(b), mustSecret(b)}
	body := bytes.Repeat([]byte("a"), 4096)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Sign(secrets, testEventID, testTime, body)
	}
}

func BenchmarkVerify4KiB(b *testing.B) {
	secret := mustSecret(b)
	body := bytes.Repeat([]byte("a"), 4096)
	header := Sign([]string{secret}, testEventID, testTime, body).Signature
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(secret, header, body, testTime); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyStandard4KiB(b *testing.B) {
	secret := mustSecret(b)
	body := bytes.Repeat([]byte("a"), 4096)
	h := http.Header{}
	Sign([]string{secret}, testEventID, testTime, body).Apply(h)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyStandard(secret, h, body, testTime); err != nil {
			b.Fatal(err)
		}
	}
}
