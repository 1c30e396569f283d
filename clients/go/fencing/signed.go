package fencing

// Signed fences (clients/conformance/signed-fence.md): the string, the key ring that verifies it.

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing/internal/storecall"
)

const (
	maxSignedFence  = 4096
	signatureLength = 86 // base64url without padding of 64 bytes
	fetchKeysLimit  = 1 << 20
	fetchKeysWait   = 10 * time.Second
)

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// signedFence is a signed fence read by the rules of its string (step 1): its fields, the bytes
// its signature covers, and the signature.
type signedFence struct {
	fence     Fence
	signed    []byte
	signature []byte
}

// parseSigned reads a signed fence's string; why says what breaks its rules (never quoting it).
func parseSigned(s string) (f signedFence, why string) {
	if len(s) > maxSignedFence {
		return f, fmt.Sprintf("is longer than %d characters", maxSignedFence)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return f, "holds a character that is not printable ASCII"
		}
	}
	fields := strings.Split(s, ":")
	if len(fields) != 7 {
		return f, fmt.Sprintf("has %d fields separated by ':', not 7", len(fields))
	}
	if fields[0] != "v1" {
		return f, "is not of version v1"
	}
	if !keyIDPattern.MatchString(fields[1]) {
		return f, "has a key id that is not 1 to 64 characters of A-Z a-z 0-9 _ -"
	}
	namespace, why := decodeName(fields[2])
	if why != "" {
		return f, "has a namespace that " + why
	}
	lock, why := decodeName(fields[3])
	if why != "" {
		return f, "has a lock name that " + why
	}
	token, ok := parseDecimal(fields[4])
	if !ok || token == 0 {
		return f, "has a token that is not an unsigned decimal from 1 to 18446744073709551615 without leading zeros"
	}
	var leaseEnd uint64
	if fields[5] != "" {
		if leaseEnd, ok = parseDecimal(fields[5]); !ok {
			return f, "has a lease end that is neither empty nor an unsigned decimal without leading zeros, at most 18446744073709551615"
		}
	}
	sigText := fields[6]
	signature, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if len(sigText) != signatureLength || err != nil || len(signature) != ed25519.SignatureSize {
		return f, "has a signature that is not 86 characters of canonical base64url without padding"
	}
	f.fence = Fence{Namespace: namespace, Lock: lock, Token: token, LeaseEndMs: leaseEnd, HasLeaseEnd: fields[5] != "",
		KeyID: fields[1], Signed: true}
	f.signed, f.signature = []byte(s[:strings.LastIndexByte(s, ':')]), signature
	return f, ""
}

// parseDecimal reads an unsigned decimal without sign or leading zeros, at most 2^64-1.
func parseDecimal(s string) (uint64, bool) {
	if !decimal.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// KeyID is the id of an Ed25519 public key in signed fences and JWK sets: the first 16 characters
// of the base64url (no padding) of the SHA-256 of its 32 bytes.
func KeyID(public ed25519.PublicKey) string {
	sum := sha256.Sum256(public)
	return base64.RawURLEncoding.EncodeToString(sum[:])[:16]
}

// KeyRing is the public keys a guard accepts signed fences from, by key id. It is immutable once
// built: to rotate, build a new ring (and a guard with it).
type KeyRing struct {
	keys map[string]ed25519.PublicKey
	ids  []string
}

// KeyIDs lists the ring's key ids in the order of its JWK set.
func (r *KeyRing) KeyIDs() []string { return append([]string(nil), r.ids...) }

// jwk is one key of a JWK set (RFC 7517, RFC 8037); other members are ignored.
type jwk struct {
	Kty, Crv, Kid, X string
}

// ParseKeys builds a ring from a JWK set (the JSON the server serves at GET /fence-keys and
// AdminService.GetFenceKeys gives): {"keys":[{"kty":"OKP","crv":"Ed25519","kid":…,"x":…}]}. Every
// key is checked (OKP, Ed25519, x of 32 bytes, kid the id of x); the error names the key at fault.
func ParseKeys(jwkSet []byte) (*KeyRing, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(jwkSet, &set); err != nil {
		return nil, fmt.Errorf("fencing: the JWK set %s", jsonProblem(err))
	}
	if len(set.Keys) == 0 {
		return nil, errors.New(`fencing: the JWK set has no keys (it wants {"keys":[…]})`)
	}
	ring := &KeyRing{keys: map[string]ed25519.PublicKey{}}
	for i, raw := range set.Keys {
		var k jwk
		if err := json.Unmarshal(raw, &k); err != nil {
			return nil, fmt.Errorf("fencing: key %d of the JWK set %s", i+1, jsonProblem(err))
		}
		public, err := k.check()
		if err != nil {
			return nil, fmt.Errorf("fencing: key %d of the JWK set (kid %q) %v", i+1, k.Kid, err)
		}
		if _, twice := ring.keys[k.Kid]; twice {
			return nil, fmt.Errorf("fencing: key %d of the JWK set (kid %q) is listed twice", i+1, k.Kid)
		}
		ring.keys[k.Kid] = public
		ring.ids = append(ring.ids, k.Kid)
	}
	return ring, nil
}

func (k jwk) check() (ed25519.PublicKey, error) {
	if k.Kty != "OKP" || k.Crv != "Ed25519" {
		return nil, fmt.Errorf("is not an Ed25519 key: kty %q, crv %q (want OKP, Ed25519)", k.Kty, k.Crv)
	}
	x, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil {
		return nil, errors.New("has an x that is not base64url without padding")
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("has an x of %d bytes, not 32", len(x))
	}
	if id := KeyID(x); k.Kid != id {
		return nil, fmt.Errorf("is not the id of its x, which is %q", id)
	}
	return ed25519.PublicKey(x), nil
}

// jsonProblem says in words why encoding/json refused a document.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var kind *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &kind):
		return fmt.Sprintf("has a %s where a %s belongs (at %q)", kind.Value, kind.Type, kind.Field)
	default:
		return "is not valid JSON (it ends too early)"
	}
}

// LoadKeysFile builds a ring from a JWK set in a file (ParseKeys).
func LoadKeysFile(path string) (*KeyRing, error) {
	raw, err := os.ReadFile(path)
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return nil, fmt.Errorf("fencing: reading the JWK set file %s: %v", path, pathErr.Err)
	} else if err != nil {
		return nil, fmt.Errorf("fencing: reading the JWK set file %s: %w", path, err)
	}
	ring, err := ParseKeys(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return ring, nil
}

// FetchKeys builds a ring from the JWK set at url (the holdfast server's GET /fence-keys on its
// HTTP listener), fetched once; it waits at most 10 s when ctx has no deadline. Fetch it again
// (and build a new guard) to follow a rotation.
func FetchKeys(ctx context.Context, url string) (*KeyRing, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fetchKeysWait)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil || req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, fmt.Errorf("fencing: the fence keys URL %q is not an http(s) URL", url)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fencing: fetching the fence keys from %s: %s", url, storecall.Cause(err, "the server", 0, ""))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fencing: fetching the fence keys from %s: it answered %s", url, resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, fetchKeysLimit+1))
	if err != nil {
		return nil, fmt.Errorf("fencing: fetching the fence keys from %s: %s", url, storecall.Cause(err, "the server", 0, ""))
	}
	if len(raw) > fetchKeysLimit {
		return nil, fmt.Errorf("fencing: fetching the fence keys from %s: the answer is larger than %d bytes", url, fetchKeysLimit)
	}
	ring, err := ParseKeys(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (from %s)", err, url)
	}
	return ring, nil
}

// verify is steps 3 and 4: the key is in the ring and the signature verifies with it.
func (r *KeyRing) verify(f signedFence) error {
	key, ok := r.keys[f.fence.KeyID]
	if !ok {
		return refused("unknown_fence_key", fmt.Sprintf("fence signed by unknown key %q", f.fence.KeyID), "key_id", f.fence.KeyID)
	}
	if !ed25519.Verify(key, f.signed, f.signature) {
		return refused("bad_fence_signature", fmt.Sprintf("fence signature does not verify with key %q", f.fence.KeyID), "key_id", f.fence.KeyID)
	}
	return nil
}

// Verify reads and verifies a signed fence against the ring (steps 1, 3 and 4 of the guard's
// order): a *BadFenceError when it breaks the format, a *RefusedError (unknown_fence_key,
// bad_fence_signature) otherwise. It does not check the namespace, the lock or the lease end.
func (r *KeyRing) Verify(fence string) (Fence, error) {
	f, why := parseSigned(fence)
	if why != "" {
		return Fence{}, &BadFenceError{Kind: "malformed", Field: "fence", Header: HeaderFence, Reason: why}
	}
	if err := r.verify(f); err != nil {
		return Fence{}, err
	}
	return f.fence, nil
}

// RefusedError is a guard's refusal of a well-formed fence before its store is asked: Code is the
// refusal body's "error" (signed_fence_required, unknown_fence_key, bad_fence_signature,
// fence_for_another_namespace, fence_for_another_lock: HTTP 403, gRPC PERMISSION_DENIED;
// fence_lease_ended: HTTP 409, gRPC FAILED_PRECONDITION), Fields the body's other fields.
type RefusedError struct {
	Code    string
	Message string
	Fields  map[string]string
}

func (e *RefusedError) Error() string { return e.Message }

func refused(code, message string, fields ...string) *RefusedError {
	e := &RefusedError{Code: code, Message: message, Fields: map[string]string{}}
	for i := 0; i+1 < len(fields); i += 2 {
		e.Fields[fields[i]] = fields[i+1]
	}
	return e
}
