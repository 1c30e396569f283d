package fencing

// The signed fence vectors every client runs (clients/conformance/signed-fence.json), through the
// kit's own API: ParseKeys, KeyRing.Verify and the Guard (its HTTP handler and its gRPC path).
// Wrong implementations, each with one step done wrong, must fail the file: the negative controls.

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/holdfast/holdfast/clients/go/fencing/internal/signedvectors"
)

// conformer is an implementation of the format and the guard's checks, one method per kind of vector.
type conformer interface {
	loadKeys(jwkSet []byte) (*KeyRing, error)
	// verify is steps 1, 3 and 4 for one fence string: "" (good), malformed, unknown_key or bad_signature.
	verify(ring *KeyRing, fence string) (Fence, string)
	// bind is steps 5 and 6 for a good fence: "", wrong_namespace or wrong_lock.
	bind(ring *KeyRing, fence, namespace, lock string) string
	// leaseEnd is step 7: whether the fence is admitted at nowMs with the allowance skewMs.
	leaseEnd(ring *KeyRing, fence string, nowMs, skewMs uint64) bool
	// headers is steps 1 and 2 for the values of fence, lock and token: signed, unsigned, or the refusal.
	headers(ring *KeyRing, values map[string][]string, acceptUnsigned bool) string
}

// vectorName is the vectors' name of a refusal body's error.
var vectorName = map[string]string{
	"malformed_fence": "malformed", "missing_fence": "missing", "signed_fence_required": "signed_required",
	"unknown_fence_key": "unknown_key", "bad_fence_signature": "bad_signature",
	"fence_for_another_namespace": "wrong_namespace", "fence_for_another_lock": "wrong_lock", "fence_lease_ended": "lease_ended",
}

// kit is the real implementation: every check runs through a Guard, over HTTP (its handler) and
// gRPC (the interceptors' path), which must agree.
type kit struct{}

func (kit) loadKeys(jwkSet []byte) (*KeyRing, error) { return ParseKeys(jwkSet) }

func (kit) verify(ring *KeyRing, fence string) (Fence, string) {
	f, err := ring.Verify(fence)
	var bad *BadFenceError
	var rejected *RefusedError
	switch {
	case err == nil:
		return f, ""
	case errors.As(err, &bad):
		return f, "malformed"
	case errors.As(err, &rejected):
		return f, vectorName[rejected.Code]
	}
	return f, err.Error()
}

// admitted runs the guard over HTTP and gRPC with these header values and returns the admitted
// fence and "" or the refusal's vector name.
func admitted(g Guard, values map[string][]string) (Fence, string) {
	g.Store = &MemoryStore{}
	var seen Fence
	handler := g.HTTP(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen, _ = FromContext(r.Context()) }))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	md := metadata.MD{}
	for field, vs := range values {
		for _, v := range vs {
			req.Header.Add(map[string]string{"fence": HeaderFence, "lock": HeaderLock, "token": HeaderToken}[field], v)
			md.Append(map[string]string{"fence": MetadataFence, "lock": MetadataLock, "token": MetadataToken}[field], v)
		}
	}
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, req)
	viaHTTP := ""
	if w.Code != http.StatusOK {
		var body map[string]string
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		viaHTTP = vectorName[body["error"]]
	}
	g.Store = &MemoryStore{}
	ctx, err := g.admit(context.Background(), md.Get, grpcWire, func() string { return g.Lock })
	viaGRPC := ""
	if err != nil {
		_, _, body := refusal(err)
		viaGRPC = vectorName[body["error"]]
	} else if f, _ := FromContext(ctx); f != seen {
		viaGRPC = fmt.Sprintf("gRPC admitted %+v, HTTP %+v", f, seen)
	}
	if viaHTTP != viaGRPC {
		return seen, fmt.Sprintf("HTTP says %q, gRPC %q", viaHTTP, viaGRPC)
	}
	return seen, viaHTTP
}

func (kit) bind(ring *KeyRing, fence, namespace, lock string) string {
	_, outcome := admitted(Guard{Keys: ring, Namespace: namespace, Lock: lock}, map[string][]string{"fence": {fence}})
	return outcome
}

func (kit) leaseEnd(ring *KeyRing, fence string, nowMs, skewMs uint64) bool {
	f, _ := ring.Verify(fence)
	g := Guard{Keys: ring, Namespace: f.Namespace, Lock: f.Lock, LeaseEndCheck: true, LeaseEndSkew: time.Duration(skewMs) * time.Millisecond,
		Now: func() time.Time { return time.UnixMilli(int64(nowMs)) }}
	_, outcome := admitted(g, map[string][]string{"fence": {fence}})
	return outcome == ""
}

func (kit) headers(ring *KeyRing, values map[string][]string, acceptUnsigned bool) string {
	f, outcome := admitted(Guard{Keys: ring, Lock: "orders", AcceptUnsigned: acceptUnsigned}, values)
	switch {
	case outcome != "":
		return outcome
	case f.Signed:
		return "signed"
	}
	return "unsigned"
}

// conformanceFailures runs every vector against c and says what it got wrong.
func conformanceFailures(t *testing.T, c conformer) (failures []string) {
	v := signedvectors.Load(t)
	fail := func(format string, args ...interface{}) { failures = append(failures, fmt.Sprintf(format, args...)) }
	ring, err := c.loadKeys(v.Keys.Ring)
	if err != nil {
		t.Fatalf("the vectors' ring: %v", err)
	}
	for _, k := range v.BadKeys {
		if _, err := c.loadKeys(signedvectors.JWKSet(k.JWK)); err == nil {
			fail("bad key %q: loaded", k.Name)
		}
	}
	for _, tc := range v.Verify {
		f, outcome := c.verify(ring, tc.Fence)
		if tc.Expect == nil {
			if outcome != tc.Error {
				fail("verify %q: got %q, want %s", tc.Name, outcome, tc.Error)
			}
			continue
		}
		end := ""
		if f.HasLeaseEnd {
			end = FormatToken(f.LeaseEndMs)
		}
		want := tc.Expect
		if outcome != "" || f.KeyID != want.KeyID || f.Namespace != want.Namespace || f.Lock != want.Lock ||
			FormatToken(f.Token) != want.Token || (want.LeaseEndMs == nil) == f.HasLeaseEnd || want.LeaseEndMs != nil && end != *want.LeaseEndMs || !f.Signed {
			fail("verify %q: got %+v %q, want %+v", tc.Name, f, outcome, *want)
		}
		if bound := c.bind(ring, tc.Fence, want.Namespace, want.Lock); bound != "" {
			fail("verify %q: the guard refused it for its own lock and namespace: %s", tc.Name, bound)
		}
	}
	for _, tc := range v.Bind {
		want := ""
		if tc.Error != nil {
			want = *tc.Error
		}
		if got := c.bind(ring, tc.Fence, tc.Namespace, tc.Lock); got != want {
			fail("bind %q: got %q, want %q", tc.Name, got, want)
		}
	}
	for _, tc := range v.LeaseEnd {
		now, skew := mustDecimal(t, tc.NowMs), mustDecimal(t, tc.SkewMs)
		if got := c.leaseEnd(ring, tc.Fence, now, skew); got != tc.Admitted {
			fail("leaseEnd %q: admitted %v, want %v", tc.Name, got, tc.Admitted)
		}
	}
	for _, tc := range v.Headers {
		want := tc.Expect
		if want == "" {
			want = tc.Error
		}
		if got := c.headers(ring, tc.Headers, tc.AcceptUnsigned); got != want {
			fail("headers %q: got %q, want %q", tc.Name, got, want)
		}
	}
	return failures
}

func mustDecimal(t *testing.T, s string) uint64 {
	n, ok := parseDecimal(s)
	if !ok {
		t.Fatalf("%q is not a decimal", s)
	}
	return n
}

func TestSignedFenceVectors(t *testing.T) {
	for _, failure := range conformanceFailures(t, kit{}) {
		t.Error(failure)
	}
}

func TestSignedFenceWireNames(t *testing.T) {
	w := signedvectors.Load(t).Wire
	if w.HTTP.Fence != HeaderFence || w.HTTP.Lock != HeaderLock || w.HTTP.Token != HeaderToken ||
		w.GRPC.Fence != MetadataFence || w.GRPC.Lock != MetadataLock || w.GRPC.Token != MetadataToken {
		t.Fatalf("wire names differ from signed-fence.json: %+v", w)
	}
}

// The vectors' sign cases, made with the tests' signer: it writes what a server writes, and its
// key ids are KeyID's.
func TestSignVectorsAndKeyIDs(t *testing.T) {
	v := signedvectors.Load(t)
	for _, tc := range v.Sign {
		end := ""
		if tc.LeaseEndMs != nil {
			end = *tc.LeaseEndMs
		}
		seed, _ := hex.DecodeString(tc.Seed)
		id := KeyID(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
		body := strings.Join([]string{"v1", id, EncodeLock(tc.Namespace), EncodeLock(tc.Lock), tc.Token, end}, ":")
		if got := signedvectors.Sign(t, tc.Seed, body); got != tc.Fence {
			t.Errorf("sign %q: %s, want %s", tc.Name, got, tc.Fence)
		}
	}
	for kid, seedHex := range v.Keys.Seeds {
		seed, _ := hex.DecodeString(seedHex)
		if id := KeyID(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)); id != kid {
			t.Errorf("KeyID of seed %s… is %q, the vectors say %q", seedHex[:8], id, kid)
		}
	}
}

// Bad keys are refused with an error naming the key.
func TestParseKeysNamesTheBadKey(t *testing.T) {
	v := signedvectors.Load(t)
	ring := v.RingKeys(t)
	for _, k := range v.BadKeys {
		_, err := ParseKeys(signedvectors.JWKSet(ring[0], k.JWK))
		if err == nil || !strings.Contains(err.Error(), "key 2 of the JWK set") {
			t.Errorf("bad key %q as the second key: %v", k.Name, err)
		}
	}
	for what, set := range map[string]string{"not JSON": "{", "no keys": `{"keys":[]}`, "keys not a list": `{"keys":{}}`} {
		if _, err := ParseKeys([]byte(set)); err == nil || !strings.Contains(err.Error(), "JWK set") {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// The negative controls: each wrong implementation fails the file.

type skipsSignature struct{ kit }

func (skipsSignature) verify(ring *KeyRing, fence string) (Fence, string) {
	f, why := parseSigned(fence)
	if why != "" {
		return Fence{}, "malformed"
	}
	if _, ok := ring.keys[f.fence.KeyID]; !ok {
		return Fence{}, "unknown_key"
	}
	return f.fence, ""
}

// onlyChecksTheSignature splits the fence and verifies its signature, without the format's rules.
type onlyChecksTheSignature struct{ kit }

func (onlyChecksTheSignature) verify(ring *KeyRing, fence string) (Fence, string) {
	i := strings.LastIndexByte(fence, ':')
	fields := strings.Split(fence, ":")
	if i < 0 || len(fields) < 2 {
		return Fence{}, "malformed"
	}
	key, ok := ring.keys[fields[1]]
	if !ok {
		return Fence{}, "unknown_key"
	}
	signature, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(fence[i+1:], "="))
	if len(signature) != ed25519.SignatureSize || !ed25519.Verify(key, []byte(fence[:i]), signature) {
		return Fence{}, "bad_signature"
	}
	f, _ := parseSigned(fence)
	return f.fence, ""
}

type matchesLockByPrefix struct{ kit }

func (matchesLockByPrefix) bind(ring *KeyRing, fence, namespace, lock string) string {
	f, _ := ring.Verify(fence)
	switch {
	case f.Namespace != namespace:
		return "wrong_namespace"
	case !strings.HasPrefix(lock, f.Lock):
		return "wrong_lock"
	}
	return ""
}

type ignoresNamespace struct{ kit }

func (ignoresNamespace) bind(ring *KeyRing, fence, _, lock string) string {
	if f, _ := ring.Verify(fence); f.Lock != lock {
		return "wrong_lock"
	}
	return ""
}

type refusesAtTheEnd struct{ kit }

func (refusesAtTheEnd) leaseEnd(ring *KeyRing, fence string, nowMs, skewMs uint64) bool {
	f, _ := ring.Verify(fence)
	return !f.HasLeaseEnd || nowMs < f.LeaseEndMs+skewMs
}

// firstValueWins reads the first of repeated headers, as the Python guards did.
type firstValueWins struct{ kit }

func (k firstValueWins) headers(ring *KeyRing, values map[string][]string, acceptUnsigned bool) string {
	first := map[string][]string{}
	for field, vs := range values {
		first[field] = vs[:1]
	}
	return k.kit.headers(ring, first, acceptUnsigned)
}

// ignoresUnsignedHeaders reads the signed fence alone when there is one.
type ignoresUnsignedHeaders struct{ kit }

func (k ignoresUnsignedHeaders) headers(ring *KeyRing, values map[string][]string, acceptUnsigned bool) string {
	if fence, ok := values["fence"]; ok {
		return k.kit.headers(ring, map[string][]string{"fence": fence}, acceptUnsigned)
	}
	return k.kit.headers(ring, values, acceptUnsigned)
}

// acceptsUnsignedAlways lets the unsigned pair through whatever the guard says.
type acceptsUnsignedAlways struct{ kit }

func (k acceptsUnsignedAlways) headers(ring *KeyRing, values map[string][]string, _ bool) string {
	return k.kit.headers(ring, values, true)
}

// trustsKid loads a key without checking that its kid is the id of its x.
type trustsKid struct{ kit }

func (trustsKid) loadKeys(jwkSet []byte) (*KeyRing, error) {
	var set struct{ Keys []jwk }
	if err := json.Unmarshal(jwkSet, &set); err != nil {
		return nil, err
	}
	ring := &KeyRing{keys: map[string]ed25519.PublicKey{}}
	for _, k := range set.Keys {
		x, _ := base64.RawURLEncoding.DecodeString(k.X)
		if k.Kty != "OKP" || k.Crv != "Ed25519" || len(x) != ed25519.PublicKeySize {
			return nil, errors.New("not an Ed25519 key")
		}
		ring.keys[k.Kid] = x
	}
	return ring, nil
}

func TestSignedFenceVectorsCatchWrongImplementations(t *testing.T) {
	for name, wrong := range map[string]conformer{
		"skips the signature":                         skipsSignature{},
		"checks only the signature, not the format":   onlyChecksTheSignature{},
		"matches the lock by prefix":                  matchesLockByPrefix{},
		"ignores the namespace":                       ignoresNamespace{},
		"refuses at the lease end plus the allowance": refusesAtTheEnd{},
		"reads the first of a repeated header":        firstValueWins{},
		"ignores the unsigned headers' disagreement":  ignoresUnsignedHeaders{},
		"accepts unsigned fences when it must not":    acceptsUnsignedAlways{},
		"trusts a key's kid without computing it":     trustsKid{},
	} {
		if failures := conformanceFailures(t, wrong); len(failures) == 0 {
			t.Errorf("the vectors pass an implementation that %s", name)
		} else {
			t.Logf("an implementation that %s fails: %s", name, failures[0])
		}
	}
}
