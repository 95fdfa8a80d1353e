// Package sign signs outgoing finsvc webhook deliveries and verifies them on
// the receiving side.
//
// Every delivery carries two independent signatures over the same raw body,
// so that receivers can use whichever suits them:
//
//   - X-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…] where each v1 is the
//     lowercase hex HMAC-SHA256 of "<t>.<raw body>", keyed with the whole
//     secret string (including the "whsec_" prefix) as UTF-8 bytes. Check it
//     with [Verify] or [VerifyAny].
//   - The Standard Webhooks headers webhook-id, webhook-timestamp and
//     webhook-signature: v1,<base64>[ v1,<base64>…] where each signature is the
//     standard base64 HMAC-SHA256 of "<id>.<t>.<raw body>", keyed with the
//     base64-decoded part of the secret after "whsec_". Any Standard Webhooks
//     library verifies these; [VerifyStandard] does too.
//
// During a secret rotation overlap (24h after rotation) each header carries
// one signature per valid secret, so a receiver still configured with the old
// secret keeps working until it switches.
//
// Receivers must verify the exact bytes they received, before any JSON
// decoding or re-encoding, and should reject deliveries whose timestamp is
// more than [Tolerance] away from their own clock; the Verify functions do
// that.
package sign

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names set by [Headers.Apply].
const (
	// HeaderSignature carries the finsvc signature "t=…,v1=…".
	HeaderSignature = "X-Signature"
	// HeaderWebhookID carries the event id (Standard Webhooks).
	HeaderWebhookID = "webhook-id"
	// HeaderWebhookTimestamp carries the signing time in unix seconds
	// (Standard Webhooks).
	HeaderWebhookTimestamp = "webhook-timestamp"
	// HeaderWebhookSignature carries the space-separated "v1,<base64>"
	// signatures (Standard Webhooks).
	HeaderWebhookSignature = "webhook-signature"
)

// SecretPrefix starts every webhook secret. It marks the string as a webhook
// secret for humans and secret scanners and is the prefix the Standard
// Webhooks libraries strip before base64-decoding the key.
const SecretPrefix = "whsec_"

// secretKeyLen is the number of random bytes behind a secret; 32 bytes matches
// the SHA-256 block-size guidance for HMAC keys and what Standard Webhooks
// recommends (24–64 bytes).
const secretKeyLen = 32

// Tolerance is how far the signed timestamp may be from the receiver's clock,
// in either direction, before a delivery is rejected. It bounds how long a
// captured delivery can be replayed and absorbs modest clock skew.
const Tolerance = 5 * time.Minute

// Sentinel errors returned (wrapped) by the Verify functions. Use errors.Is.
var (
	// ErrNoSignature means the header is missing or carries no signature of a
	// scheme this package understands (v1).
	ErrNoSignature = errors.New("sign: no v1 signature present")
	// ErrInvalidSignature means no signature matches the body and secret(s):
	// the body was altered, the secret is wrong, or the sender is not finsvc.
	ErrInvalidSignature = errors.New("sign: signature does not match")
	// ErrTimestampTolerance means the signature is authentic but its timestamp
	// is more than Tolerance away from now (a replay, or a badly skewed clock).
	ErrTimestampTolerance = errors.New("sign: timestamp outside tolerance")
	// ErrMalformedHeader means a signature header could not be parsed.
	ErrMalformedHeader = errors.New("sign: malformed signature header")
	// ErrInvalidSecret means a secret is not "whsec_" followed by standard
	// base64; only the Standard Webhooks form needs to decode the secret.
	ErrInvalidSecret = errors.New("sign: invalid webhook secret")
)

// NewSecret returns a fresh secret: "whsec_" followed by the standard base64
// encoding of 32 bytes from crypto/rand.
func NewSecret() (string, error) {
	var key [secretKeyLen]byte
	if _, err := rand.Read(key[:]); err != nil {
		return "", fmt.Errorf("sign: generate secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key[:]), nil
}

// CheckSecret reports whether secret has the form NewSecret produces. Secrets
// that fail it still sign X-Signature (which uses the raw string) but cannot
// produce a Standard Webhooks signature, so registration code should reject
// them up front.
func CheckSecret(secret string) error {
	_, err := standardKey(secret)
	return err
}

// standardKey returns the HMAC key for the Standard Webhooks scheme: the
// base64-decoded part after the prefix. Like the reference libraries, a
// secret without the prefix is decoded whole.
func standardKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("%w: not %s + standard base64", ErrInvalidSecret, SecretPrefix)
	}
	return key, nil
}

// Headers holds the signature headers for one delivery attempt. Build it with
// [Sign] and copy it onto the request with [Headers.Apply].
type Headers struct {
	// Signature is the X-Signature value: "t=<unix>,v1=<hex>[,v1=<hex>…]".
	Signature string
	// WebhookID is the event id; it is signed as part of the Standard
	// Webhooks message, so receivers can trust it for deduplication.
	WebhookID string
	// WebhookTimestamp is the signing time in unix seconds.
	WebhookTimestamp string
	// WebhookSignature is "v1,<base64>[ v1,<base64>…]"; empty when no secret
	// could be decoded (see CheckSecret).
	WebhookSignature string
}

// Apply sets the signature headers on h, replacing any previous values.
func (s Headers) Apply(h http.Header) {
	h.Set(HeaderSignature, s.Signature)
	h.Set(HeaderWebhookID, s.WebhookID)
	h.Set(HeaderWebhookTimestamp, s.WebhookTimestamp)
	if s.WebhookSignature != "" {
		h.Set(HeaderWebhookSignature, s.WebhookSignature)
	} else {
		h.Del(HeaderWebhookSignature)
	}
}

// Sign computes the signature headers for one delivery attempt of event
// eventID with the given raw body, signed at t (truncated to whole seconds).
//
// secrets are all currently valid secrets of the registration (the current
// one and, during a rotation overlap, the previous one); each yields one v1
// signature in each header, in the order given. Each attempt must be signed
// afresh with the attempt's own time so the receiver's tolerance check passes
// on retries. A secret that CheckSecret rejects contributes only to
// X-Signature.
func Sign(secrets []string, eventID string, t time.Time, body []byte) Headers {
	ts := strconv.FormatInt(t.Unix(), 10)

	var sig strings.Builder
	sig.Grow(2 + len(ts) + len(secrets)*(4+hex.EncodedLen(sha256.Size)))
	sig.WriteString("t=")
	sig.WriteString(ts)

	var std strings.Builder
	for _, secret := range secrets {
		sig.WriteString(",v1=")
		sig.WriteString(hex.EncodeToString(macLegacy([]byte(secret), ts, body)))

		key, err := standardKey(secret)
		if err != nil {
			continue
		}
		if std.Len() > 0 {
			std.WriteByte(' ')
		}
		std.WriteString("v1,")
		std.WriteString(base64.StdEncoding.EncodeToString(macStandard(key, eventID, ts, body)))
	}

	return Headers{
		Signature:        sig.String(),
		WebhookID:        eventID,
		WebhookTimestamp: ts,
		WebhookSignature: std.String(),
	}
}

// macLegacy is HMAC-SHA256(key, "<ts>.<body>"). The body is fed to the MAC
// directly rather than concatenated, so signing never copies it.
func macLegacy(key []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	writeParts(m, ts, body)
	return m.Sum(nil)
}

// macStandard is HMAC-SHA256(key, "<id>.<ts>.<body>").
func macStandard(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	writeParts(m, ts, body)
	return m.Sum(nil)
}

func writeParts(m hash.Hash, ts string, body []byte) {
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
}

// Verify checks an X-Signature header value against the raw request body and
// the registration's secret, as a receiver should before trusting a delivery.
// now is the receiver's current time (pass time.Now()).
//
// It returns nil when some v1 signature matches and the timestamp is within
// Tolerance of now. Otherwise the error wraps one of ErrMalformedHeader,
// ErrNoSignature, ErrInvalidSignature or ErrTimestampTolerance. The signature
// is checked before the timestamp, so ErrTimestampTolerance always means an
// authentic but stale (or replayed) delivery.
func Verify(secret string, header string, body []byte, now time.Time) error {
	return VerifyAny([]string{secret}, header, body, now)
}

// VerifyAny is Verify for a receiver that itself rotates secrets: the
// delivery is accepted when any v1 signature matches any of secrets. With no
// secrets nothing can match, so it returns ErrInvalidSignature (after the
// header has parsed).
func VerifyAny(secrets []string, header string, body []byte, now time.Time) error {
	p, err := parseSignatureHeader(header)
	if err != nil {
		return err
	}
	matched := false
	for _, secret := range secrets {
		want := macLegacy([]byte(secret), p.ts, body)
		for _, got := range p.v1 {
			// Not short-circuiting keeps the work independent of which
			// signature (if any) matched.
			if hmac.Equal(want, got) {
				matched = true
			}
		}
	}
	if !matched {
		return ErrInvalidSignature
	}
	return checkTolerance(p.t, now)
}

// VerifyStandard checks the Standard Webhooks headers (webhook-id,
// webhook-timestamp, webhook-signature) in h against the raw body and secret.
// It applies the same rules and returns the same errors as Verify; a secret
// that is not "whsec_" + base64 gives ErrInvalidSecret. Signatures of other
// versions (for example v1a) are ignored, as the Standard Webhooks
// specification requires.
func VerifyStandard(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := standardKey(secret)
	if err != nil {
		return err
	}

	id := h.Get(HeaderWebhookID)
	if id == "" {
		return fmt.Errorf("%w: missing %s", ErrMalformedHeader, HeaderWebhookID)
	}
	tsHeader := h.Get(HeaderWebhookTimestamp)
	if tsHeader == "" {
		return fmt.Errorf("%w: missing %s", ErrMalformedHeader, HeaderWebhookTimestamp)
	}
	t, err := parseUnix(tsHeader)
	if err != nil {
		return err
	}
	sigHeader := h.Get(HeaderWebhookSignature)
	if sigHeader == "" {
		return ErrNoSignature
	}

	var sigs [][]byte
	for _, entry := range strings.Split(sigHeader, " ") {
		version, value, ok := strings.Cut(entry, ",")
		if !ok || version == "" || value == "" {
			return fmt.Errorf("%w: signature entry %q is not <version>,<signature>", ErrMalformedHeader, entry)
		}
		if version != "v1" {
			continue
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(value)
		if err != nil || len(raw) != sha256.Size {
			return fmt.Errorf("%w: v1 signature is not base64 of 32 bytes", ErrMalformedHeader)
		}
		sigs = append(sigs, raw)
	}
	if len(sigs) == 0 {
		return ErrNoSignature
	}

	want := macStandard(key, id, tsHeader, body)
	matched := false
	for _, got := range sigs {
		if hmac.Equal(want, got) {
			matched = true
		}
	}
	if !matched {
		return ErrInvalidSignature
	}
	return checkTolerance(t, now)
}

// parsedSignature is a parsed X-Signature value.
type parsedSignature struct {
	ts string    // the t value exactly as sent; it is what was signed
	t  time.Time // ts as a time
	v1 [][]byte  // decoded v1 signatures
}

// parseSignatureHeader parses "t=<digits>,v1=<64 lowercase hex>[,…]".
//
// It is strict about what it understands — exactly one t, every v1 exactly
// 64 lowercase hex digits, no whitespace, no empty elements — because a
// lenient parser is where signature-bypass bugs live. Elements with other
// well-formed keys (say a future v2) are skipped so receivers keep working
// when a new scheme is added next to v1.
func parseSignatureHeader(header string) (parsedSignature, error) {
	var p parsedSignature
	if header == "" {
		return p, ErrNoSignature
	}
	seenT := false
	for _, elem := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(elem, "=")
		if !ok || !validKey(key) || value == "" {
			return p, fmt.Errorf("%w: element %q is not key=value", ErrMalformedHeader, elem)
		}
		switch key {
		case "t":
			if seenT {
				return p, fmt.Errorf("%w: more than one t", ErrMalformedHeader)
			}
			seenT = true
			t, err := parseUnix(value)
			if err != nil {
				return p, err
			}
			p.ts, p.t = value, t
		case "v1":
			if len(value) != hex.EncodedLen(sha256.Size) || !isLowerHex(value) {
				return p, fmt.Errorf("%w: v1 is not 64 lowercase hex digits", ErrMalformedHeader)
			}
			raw, _ := hex.DecodeString(value) // validated above
			p.v1 = append(p.v1, raw)
		default:
			if strings.ContainsAny(value, " \t") {
				return p, fmt.Errorf("%w: whitespace in %s", ErrMalformedHeader, key)
			}
		}
	}
	if !seenT {
		return p, fmt.Errorf("%w: missing t", ErrMalformedHeader)
	}
	if len(p.v1) == 0 {
		return p, ErrNoSignature
	}
	return p, nil
}

// validKey accepts lowercase ASCII letters and digits, the alphabet of every
// scheme name we have used or plan to.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseUnix parses a non-negative decimal unix timestamp. Signs, spaces and
// absurdly long values are rejected rather than normalised: the string is
// signed as sent, so there must be only one way to write it.
func parseUnix(s string) (time.Time, error) {
	if s == "" || len(s) > 12 { // 12 digits reaches year 33658
		return time.Time{}, fmt.Errorf("%w: timestamp %q is not unix seconds", ErrMalformedHeader, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, fmt.Errorf("%w: timestamp %q is not unix seconds", ErrMalformedHeader, s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: timestamp %q is not unix seconds", ErrMalformedHeader, s)
	}
	return time.Unix(n, 0), nil
}

func checkTolerance(t, now time.Time) error {
	d := now.Sub(t)
	if d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w: signed at %s, now %s", ErrTimestampTolerance,
			t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}
