// Package fencetest holds what the fencing stores' tests share: the conformance cases of
// clients/conformance/fencing.json and the concurrency checker.
package fencetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

// RandomID is 16 random hex digits.
func RandomID(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// RandomLock is a lock name no other test uses, with a slash and a space to exercise encoding.
func RandomLock(t testing.TB) string {
	return "go-fence/" + RandomID(t) + " é"
}

// Conformance is clients/conformance/fencing.json.
type Conformance struct {
	Wire struct {
		GrpcMetadata struct{ Lock, Token string }
		HTTPHeaders  struct{ Lock, Token string } `json:"httpHeaders"`
	}
	Attach []struct {
		Name, Lock, Token string
		Headers           struct{ Lock, Token string }
	}
	Parse []struct {
		Name    string
		Headers map[string]string
		Expect  *struct{ Lock, Token string }
		Error   string
		Field   string
	}
	Decide []struct {
		Name        string
		Newest      *string
		Token       string
		Accepted    bool
		NewestAfter string
	}
	Refusal struct{ Message string }
}

// Load reads the cases (failing the test when the file lost them).
func Load(t testing.TB) Conformance {
	raw, err := os.ReadFile(filepath.Join(testrepo.Root(t), "clients", "conformance", "fencing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c Conformance
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Attach) == 0 || len(c.Parse) == 0 || len(c.Decide) == 0 {
		t.Fatal("fencing.json has no cases: its layout changed")
	}
	return c
}

// Uint64 parses a case's decimal token.
func Uint64(t testing.TB, s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// RunDecideCases fails the test on every DecideFailures.
func RunDecideCases(t *testing.T, store fencing.Store) {
	for _, failure := range DecideFailures(t, store) {
		t.Error(failure)
	}
}

// DecideFailures runs the "decide" cases against store, each on a lock of its own, checks the
// refusal message of the refused ones, and says what went wrong.
func DecideFailures(t testing.TB, store fencing.Store) (failures []string) {
	c := Load(t)
	ctx := context.Background()
	for _, tc := range c.Decide {
		lock := RandomLock(t)
		if tc.Newest != nil {
			if d, err := store.Check(ctx, lock, Uint64(t, *tc.Newest)); err != nil || !d.Accepted {
				t.Fatalf("%s: recording newest: %+v, %v", tc.Name, d, err)
			}
		}
		d, err := store.Check(ctx, lock, Uint64(t, tc.Token))
		if err != nil {
			t.Fatal(err)
		}
		if d.Accepted != tc.Accepted || d.Newest != Uint64(t, tc.NewestAfter) {
			failures = append(failures, fmt.Sprintf("%s: got %+v, want accepted %v newest %s", tc.Name, d, tc.Accepted, tc.NewestAfter))
		}
		if !d.Accepted {
			got := (&fencing.StaleError{Lock: lock, Token: Uint64(t, tc.Token), Newest: d.Newest}).Error()
			want := strings.NewReplacer("{lock}", lock, "{token}", tc.Token, "{newest}", tc.NewestAfter).Replace(c.Refusal.Message)
			if got != want {
				failures = append(failures, fmt.Sprintf("%s: refusal %q, want %q", tc.Name, got, want))
			}
		}
	}
	return failures
}
