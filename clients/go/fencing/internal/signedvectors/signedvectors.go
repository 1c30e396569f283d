// Package signedvectors reads clients/conformance/signed-fence.json, the signed fence format's
// vectors, and signs fences with its test seeds (RFC 8032's: for tests only). It does not import
// the fencing package, so that package's own tests can use it.
package signedvectors

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

// Vectors is signed-fence.json.
type Vectors struct {
	Keys struct {
		Ring     json.RawMessage
		Outsider json.RawMessage
		Seeds    map[string]string
	}
	BadKeys []struct {
		Name string
		JWK  json.RawMessage
	}
	Sign []struct {
		Name, Seed, Namespace, Lock, Token string
		LeaseEndMs                         *string
		Fence                              string
	}
	Verify []struct {
		Name, Fence string
		Expect      *struct {
			KeyID, Namespace, Lock, Token string
			LeaseEndMs                    *string
		}
		Error string
	}
	Bind []struct {
		Name, Fence, Namespace, Lock string
		Error                        *string
	}
	LeaseEnd []struct {
		Name, Fence, NowMs, SkewMs string
		Admitted                   bool
	}
	Headers []struct {
		Name           string
		Headers        map[string][]string
		AcceptUnsigned bool
		Expect, Error  string
	}
	Wire struct {
		HTTP, GRPC struct{ Fence, Lock, Token string }
	}
}

// Load reads the vectors (failing the test when the file lost them).
func Load(t testing.TB) Vectors {
	raw, err := os.ReadFile(filepath.Join(testrepo.Root(t), "clients", "conformance", "signed-fence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v Vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Verify) == 0 || len(v.Bind) == 0 || len(v.LeaseEnd) == 0 || len(v.Headers) == 0 || len(v.BadKeys) == 0 ||
		len(v.Sign) == 0 || len(v.Keys.Seeds) < 3 {
		t.Fatal("signed-fence.json has no cases: its layout changed")
	}
	return v
}

// Sign signs a fence's first six fields (body, everything before the signature) with the test
// seed given in hex, and returns the whole fence.
func Sign(t testing.TB, seedHex, body string) string {
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("a test seed is not 32 bytes of hex")
	}
	signature := ed25519.Sign(ed25519.NewKeyFromSeed(seed), []byte(body))
	return body + ":" + base64.RawURLEncoding.EncodeToString(signature)
}

// JWKSet is a JWK set of the given keys (each a JWK as the vectors hold them).
func JWKSet(keys ...json.RawMessage) []byte {
	set, _ := json.Marshal(map[string][]json.RawMessage{"keys": keys})
	return set
}

// RingKeys are the keys of the vectors' ring, one JWK each.
func (v Vectors) RingKeys(t testing.TB) []json.RawMessage {
	var ring struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(v.Keys.Ring, &ring); err != nil || len(ring.Keys) < 2 {
		t.Fatalf("signed-fence.json's keys.ring is not a JWK set of two keys: %v", err)
	}
	return ring.Keys
}
