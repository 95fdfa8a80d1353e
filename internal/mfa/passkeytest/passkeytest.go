// Package passkeytest is a software passkey for tests: a P-256 key with
// "none" attestation and a sign count that goes up with each use, which
// answers the options internal/mfa hands out as a browser would pass on
// an authenticator's answer (the JSON of a PublicKeyCredential).
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
)

// Authenticator is one software passkey.
type Authenticator struct {
	key *ecdsa.PrivateKey
	// ID is the credential id.
	ID []byte
	// Count is the signature counter (set it back to act as a clone).
	Count uint32
}

// New makes an authenticator with a new key.
func New(t testing.TB) *Authenticator {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &Authenticator{key: k, ID: id}
}

var b64 = base64.RawURLEncoding

// Challenge reads the challenge out of a ceremony's options.
func Challenge(t testing.TB, options []byte) string {
	t.Helper()
	var o struct {
		PublicKey struct {
			Challenge string `json:"challenge"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal(options, &o); err != nil || o.PublicKey.Challenge == "" {
		t.Fatalf("options without a challenge: %s (%v)", options, err)
	}
	return o.PublicKey.Challenge
}

func (a *Authenticator) authData(rpID string, flags byte, attested []byte) []byte {
	h := sha256.Sum256([]byte(rpID))
	out := append(h[:], flags)
	out = binary.BigEndian.AppendUint32(out, a.Count)
	return append(out, attested...)
}

func clientData(typ, chal, origin string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": chal, "origin": origin, "crossOrigin": false})
	return b
}

// Flags of the authenticator data: user present, user verified,
// attested credential data included.
const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

// Create answers navigator.credentials.create's options as seen from
// origin, for the RP id rpID.
func (a *Authenticator) Create(t testing.TB, options []byte, origin, rpID string) []byte {
	t.Helper()
	cose, err := webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: 2, Algorithm: -7},
		Curve:         1, XCoord: a.key.X.FillBytes(make([]byte, 32)), YCoord: a.key.Y.FillBytes(make([]byte, 32)),
	})
	if err != nil {
		t.Fatal(err)
	}
	attested := make([]byte, 16) // AAGUID: none
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(a.ID)))
	attested = append(append(attested, a.ID...), cose...)
	ao, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(rpID, flagUP|flagUV|flagAT, attested)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"id": b64.EncodeToString(a.ID), "rawId": b64.EncodeToString(a.ID), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(clientData("webauthn.create", Challenge(t, options), origin)),
			"attestationObject": b64.EncodeToString(ao),
		}})
	return b
}

// Get answers navigator.credentials.get's options as seen from origin,
// for the RP id rpID.
func (a *Authenticator) Get(t testing.TB, options []byte, origin, rpID string) []byte {
	t.Helper()
	a.Count++
	ad := a.authData(rpID, flagUP|flagUV, nil)
	cd := clientData("webauthn.get", Challenge(t, options), origin)
	h := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"id": b64.EncodeToString(a.ID), "rawId": b64.EncodeToString(a.ID), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON": b64.EncodeToString(cd), "authenticatorData": b64.EncodeToString(ad),
			"signature": b64.EncodeToString(sig),
		}})
	return b
}
