package fencing_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/signedvectors"
)

func TestSignedRefusalsNeverReachTheMemoryStore(t *testing.T) {
	fencetest.RefusalsBeforeStore(t, &fencing.MemoryStore{})
}

func TestSignedKleppmannMemoryStore(t *testing.T) {
	fencetest.Kleppmann(t, &fencing.MemoryStore{})
}

// Negative control: without keys, a forged token takes the resource over.
func TestForgerTakesOverAnUnsignedGuardMemoryStore(t *testing.T) {
	fencetest.ForgerTakesOverAnUnsignedGuard(t, &fencing.MemoryStore{})
}

// The handler reads the admitted fence with FromContext, over HTTP, unary gRPC and a stream.
func TestFromContextGivesTheAdmittedFence(t *testing.T) {
	s, lock := fencetest.NewSigner(t), fencetest.RandomLock(t)
	end := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
	fence := s.Fence(s.OtherKey, "default", lock, 9, end)
	want := fencing.Fence{Namespace: "default", Lock: lock, Token: 9, LeaseEndMs: uint64(end.UnixMilli()), HasLeaseEnd: true, KeyID: s.OtherKey, Signed: true}
	r := fencetest.Serve(t, fencing.Guard{Store: &fencing.MemoryStore{}, Keys: s.Ring, Lock: lock})
	if status, body := r.Put("holder:1", fencetest.Signed(fence, lock, 9)); status != 200 || r.Admitted() != want {
		t.Fatalf("HTTP: %d %v, the handler read %+v, want %+v", status, body, r.Admitted(), want)
	}
	for _, stream := range []bool{false, true} {
		if err := r.Call(fencetest.Signed(fence, lock, 9), stream); err != nil || r.Admitted() != want {
			t.Fatalf("gRPC (stream %v): %v, the handler read %+v", stream, err, r.Admitted())
		}
	}
	// An unsigned fence the guard accepts: no namespace, key id or lease end.
	unsigned := fencetest.Serve(t, fencing.Guard{Store: &fencing.MemoryStore{}, Keys: s.Ring, Lock: lock, AcceptUnsigned: true})
	if status, _ := unsigned.Put("holder:1", fencetest.Headers{"lock": {fencing.EncodeLock(lock)}, "token": {"9"}}); status != 200 ||
		unsigned.Admitted() != (fencing.Fence{Lock: lock, Token: 9}) {
		t.Fatalf("unsigned: %d, the handler read %+v", status, unsigned.Admitted())
	}
}

// AcceptUnsigned keeps steps 1, 6 and 8 for unsigned fences; a guard without keys checks their
// lock when it knows the resource's.
func TestUnsignedFencesAgainstTheResourceLock(t *testing.T) {
	s, lock := fencetest.NewSigner(t), fencetest.RandomLock(t)
	other := fencetest.Headers{"lock": {"other"}, "token": {"4"}}
	for name, guard := range map[string]fencing.Guard{
		"keys, unsigned accepted": {Store: &fencing.MemoryStore{}, Keys: s.Ring, Lock: lock, AcceptUnsigned: true},
		"no keys, a lock":         {Store: &fencing.MemoryStore{}, Lock: lock},
	} {
		r := fencetest.Serve(t, guard)
		if status, body := r.Put("x:1", other); status != 403 || body["error"] != "fence_for_another_lock" || body["lock"] != "other" || body["expected"] != lock ||
			body["message"] != `fence for lock "other" refused: this resource is protected by lock "`+lock+`"` {
			t.Errorf("%s: a fence of another lock: %d %v", name, status, body)
		}
		if status, body := r.Put("x:1", fencetest.Headers{"lock": {fencing.EncodeLock(lock)}, "token": {"4"}}); status != 200 {
			t.Errorf("%s: the resource's own lock: %d %v", name, status, body)
		}
	}
	// Without keys or a lock, the guard checks tokens only, as before signed fences.
	r := fencetest.Serve(t, fencing.Guard{Store: &fencing.MemoryStore{}})
	if status, body := r.Put("x:1", other); status != 200 {
		t.Fatalf("a guard with no lock refused %d %v", status, body)
	}
}

// Rotation: a fence of a key is admitted while its key is in the guard's ring, refused (unknown
// key) by a guard built with a ring without it.
func TestRotationAtTheGuard(t *testing.T) {
	s, lock := fencetest.NewSigner(t), fencetest.RandomLock(t)
	oldFence := s.Fence(s.Key, "default", lock, 1, time.Now().Add(time.Hour))
	newFence := s.Fence(s.OtherKey, "default", lock, 2, time.Now().Add(time.Hour))
	store := &fencing.MemoryStore{}
	both := fencetest.Serve(t, fencing.Guard{Store: store, Keys: s.Ring, Lock: lock})
	if status, body := both.Put("old:1", fencetest.Signed(oldFence, lock, 1)); status != 200 {
		t.Fatalf("the old key's fence while the ring has it: %d %v", status, body)
	}
	newRing, err := fencing.ParseKeys(signedvectors.JWKSet(s.RingKeys[1]))
	if err != nil {
		t.Fatal(err)
	}
	if ids := newRing.KeyIDs(); len(ids) != 1 || ids[0] != s.OtherKey {
		t.Fatalf("the new ring holds %v", ids)
	}
	rotated := fencetest.Serve(t, fencing.Guard{Store: store, Keys: newRing, Lock: lock})
	status, body := rotated.Put("old:2", fencetest.Signed(oldFence, lock, 1))
	if status != 403 || body["error"] != "unknown_fence_key" || body["key_id"] != s.Key || body["message"] != `fence signed by unknown key "`+s.Key+`"` {
		t.Fatalf("the old key's fence after the rotation: %d %v", status, body)
	}
	if status, body := rotated.Put("new:1", fencetest.Signed(newFence, lock, 2)); status != 200 {
		t.Fatalf("the new key's fence: %d %v", status, body)
	}
}

// The lease-end check refuses a fence whose lease ended (no newer writer) with an allowance, and
// admits it without one (the negative control); a fence whose lease runs, or that states no end,
// passes with it on.
func TestLeaseEndCheck(t *testing.T) {
	s := fencetest.NewSigner(t)
	ended := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
	for _, c := range []struct {
		name     string
		check    bool
		leaseEnd time.Time
		status   int
	}{
		{"ended, check on", true, ended, 409},
		{"ended, check off (the control)", false, ended, 200},
		{"running, check on", true, time.Now().Add(time.Hour), 200},
		{"no end stated, check on", true, time.Time{}, 200},
	} {
		lock := fencetest.RandomLock(t)
		store := &fencetest.Counting{Store: &fencing.MemoryStore{}}
		r := fencetest.Serve(t, fencing.Guard{Store: store, Keys: s.Ring, Lock: lock, LeaseEndCheck: c.check, LeaseEndSkew: 2 * time.Second})
		code, body := r.Put("paused:1", fencetest.Signed(s.Fence(s.Key, "default", lock, 3, c.leaseEnd), lock, 3))
		if code != c.status {
			t.Fatalf("%s: %d %v, want %d", c.name, code, body, c.status)
		}
		if c.status != 409 {
			continue
		}
		end := fencing.FormatToken(uint64(ended.UnixMilli()))
		if body["error"] != "fence_lease_ended" || body["lock"] != lock || body["token"] != "3" || body["lease_end_ms"] != end ||
			body["skew_ms"] != "2000" || body["now_ms"] <= end ||
			body["message"] != `fence for lock "`+lock+`" (token 3) refused: its lease ended at `+end+`, now is `+body["now_ms"]+` (skew allowance 2000 ms)` {
			t.Fatalf("%s: body %v", c.name, body)
		}
		if err := r.Call(fencetest.Signed(s.Fence(s.Key, "default", lock, 3, c.leaseEnd), lock, 3), false); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("%s over gRPC: %v", c.name, err)
		}
		if store.Calls() != 0 {
			t.Fatalf("%s: the store was asked", c.name)
		}
	}
}

// A header sent twice is malformed, signed or not, keys or not (the Python guards took the first).
func TestDuplicateHeadersRefused(t *testing.T) {
	s, lock := fencetest.NewSigner(t), fencetest.RandomLock(t)
	fence := s.Valid(lock, 6)
	for name, guard := range map[string]fencing.Guard{
		"without keys": {Store: &fencing.MemoryStore{}},
		"with keys":    {Store: &fencing.MemoryStore{}, Keys: s.Ring, Lock: lock, AcceptUnsigned: true},
	} {
		r := fencetest.Serve(t, guard)
		for what, h := range map[string]fencetest.Headers{
			"token": {"lock": {"dup"}, "token": {"6", "5"}},
			"lock":  {"lock": {"dup", "dup"}, "token": {"6"}},
			"fence": {"fence": {fence, fence}, "lock": {fencing.EncodeLock(lock)}, "token": {"6"}},
		} {
			code, body := r.Put("x:1", h)
			header := map[string]string{"token": fencing.HeaderToken, "lock": fencing.HeaderLock, "fence": fencing.HeaderFence}[what]
			if code != 400 || body["error"] != "malformed_fence" || body["field"] != what || body["header"] != header ||
				body["message"] != "malformed fence: "+header+" is given more than once" {
				t.Errorf("%s, %s twice over HTTP: %d %v", name, what, code, body)
			}
			err := r.Call(h, false)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), strings.ToLower(header)+" is given more than once") {
				t.Errorf("%s, %s twice over gRPC: %v", name, what, err)
			}
		}
		if r.Reached() != 0 {
			t.Errorf("%s: the handler ran for a duplicated header", name)
		}
	}
}

// Every method is guarded by default, GET included; UnguardedRequest and Unguarded narrow it.
func TestEveryMethodGuardedByDefault(t *testing.T) {
	var reached int
	handler := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached++ })
	guarded := httptest.NewServer(fencing.Guard{Store: &fencing.MemoryStore{}}.HTTP(handler))
	defer guarded.Close()
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(method, guarded.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s without a fence: %d, want 400", method, resp.StatusCode)
		}
	}
	narrowed := httptest.NewServer(fencing.Guard{Store: &fencing.MemoryStore{}, UnguardedRequest: func(r *http.Request) bool { return r.URL.Path == "/healthz" }}.HTTP(handler))
	defer narrowed.Close()
	for path, want := range map[string]int{"/healthz": 200, "/orders": 400} {
		resp, err := http.Get(narrowed.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if reached != 1 {
		t.Fatalf("the handler ran %d times, want once (/healthz)", reached)
	}
}

// The lock from the request (HTTPLock); a rule that gives no lock fails closed; a
// guard with keys and no lock at all refuses to be built (HTTP) or to admit (gRPC).
func TestLockRules(t *testing.T) {
	s := fencetest.NewSigner(t)
	guard := fencing.Guard{Store: &fencing.MemoryStore{}, Keys: s.Ring,
		HTTPLock: func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/docs/") }}
	server := httptest.NewServer(guard.HTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer server.Close()
	put := func(path, fence string) int {
		req, _ := http.NewRequest(http.MethodPut, server.URL+path, nil)
		req.Header.Set(fencing.HeaderFence, fence)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := put("/docs/a", s.Valid("a", 1)); code != 200 {
		t.Errorf("doc a with a's fence: %d", code)
	}
	if code := put("/docs/b", s.Valid("a", 2)); code != 403 {
		t.Errorf("doc b with a's fence: %d, want 403", code)
	}
	if code := put("/docs/", s.Valid("a", 3)); code != 500 {
		t.Errorf("no lock from the rule: %d, want 500 (fail closed)", code)
	}
	defer func() {
		if recover() == nil {
			t.Error("HTTP built a guard with keys and no lock")
		}
	}()
	fencing.Guard{Store: &fencing.MemoryStore{}, Keys: s.Ring}.HTTP(http.NotFoundHandler())
}

// The gRPC lock rule reads the call's metadata; a guard with keys and no lock answers INTERNAL.
func TestGRPCLockRule(t *testing.T) {
	s := fencetest.NewSigner(t)
	byDoc := fencing.Guard{Store: &fencing.MemoryStore{}, Keys: s.Ring, Lock: "unused-by-grpc",
		GRPCLock: func(method string, md metadata.MD) string {
			if v := md.Get("doc"); len(v) == 1 && strings.HasPrefix(method, "/grpc.health.v1.Health/") {
				return v[0]
			}
			return ""
		}}
	r := fencetest.Serve(t, byDoc)
	call := func(doc, fence string) error {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "doc", doc, fencing.MetadataFence, fence)
		_, err := r.GRPC.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := call("a", s.Valid("a", 1)); err != nil {
		t.Errorf("doc a with a's fence: %v", err)
	}
	if err := call("b", s.Valid("a", 2)); status.Code(err) != codes.PermissionDenied {
		t.Errorf("doc b with a's fence: %v", err)
	}
	noLock := fencetest.Serve(t, fencing.Guard{Store: &fencing.MemoryStore{}, Keys: s.Ring, HTTPLock: func(*http.Request) string { return "a" }})
	if err := noLock.Call(fencetest.Signed(s.Valid("a", 1), "a", 1), false); status.Code(err) != codes.Internal ||
		!strings.Contains(status.Convert(err).Message(), "GRPCLock") {
		t.Errorf("keys without a gRPC lock: %v", err)
	}
}

// The ring from a file and from a URL (the server's /fence-keys), fetched once; errors name the
// file or the URL and say what is wrong.
func TestKeysFromFileAndURL(t *testing.T) {
	s := fencetest.NewSigner(t)
	set := signedvectors.JWKSet(s.RingKeys...)
	path := filepath.Join(t.TempDir(), "fence-keys.json")
	if err := os.WriteFile(path, set, 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err := fencing.LoadKeysFile(path)
	if err != nil || len(ring.KeyIDs()) != 2 {
		t.Fatalf("LoadKeysFile: %v", err)
	}
	if _, err := fencing.LoadKeysFile(path + ".missing"); err == nil || !strings.Contains(err.Error(), path+".missing") ||
		!strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: %v", err)
	}
	var fetches int
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		if r.URL.Path != "/fence-keys" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(set)
	}))
	defer server.Close()
	ring, err = fencing.FetchKeys(context.Background(), server.URL+"/fence-keys")
	if err != nil || len(ring.KeyIDs()) != 2 || fetches != 1 {
		t.Fatalf("FetchKeys: %v (%d fetches)", err, fetches)
	}
	if _, err := fencing.FetchKeys(context.Background(), server.URL+"/nothing"); err == nil || !strings.Contains(err.Error(), "404") ||
		!strings.Contains(err.Error(), server.URL+"/nothing") {
		t.Errorf("a 404: %v", err)
	}
	if _, err := fencing.FetchKeys(context.Background(), "file://"+path); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Errorf("a file URL: %v", err)
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + closed.Addr().String() + "/fence-keys"
	closed.Close()
	if _, err := fencing.FetchKeys(context.Background(), url); err == nil || !strings.Contains(err.Error(), url) ||
		!strings.Contains(err.Error(), "refuses connections") {
		t.Errorf("nothing listening: %v", err)
	}
}

// The holder's side: SetSignedHeader and OutgoingSignedContext send the signed fence and the
// unsigned pair, and replace a fence already there; without a signed fence, the pair alone.
func TestCarrySignedFence(t *testing.T) {
	h := http.Header{}
	h.Set(fencing.HeaderFence, "an older fence")
	fencing.SetSignedHeader(h, "a b", 7, "v1:k:default:a%20b:7::sig")
	if h.Get(fencing.HeaderFence) != "v1:k:default:a%20b:7::sig" || h.Get(fencing.HeaderLock) != "a%20b" || h.Get(fencing.HeaderToken) != "7" || len(h.Values(fencing.HeaderFence)) != 1 {
		t.Fatalf("headers %v", h)
	}
	fencing.SetHeader(h, "a", 8)
	if h.Get(fencing.HeaderFence) != "" || h.Get(fencing.HeaderToken) != "8" {
		t.Fatalf("an unsigned fence over a signed one: %v", h)
	}
	ctx := fencing.OutgoingSignedContext(metadata.AppendToOutgoingContext(context.Background(), "other", "kept"), "a", 7, "v1:k:default:a:7::sig")
	ctx = fencing.OutgoingSignedContext(ctx, "a", 9, "v1:k:default:a:9::sig")
	md, _ := metadata.FromOutgoingContext(ctx)
	if got := md.Get(fencing.MetadataFence); len(got) != 1 || got[0] != "v1:k:default:a:9::sig" || md.Get("other")[0] != "kept" || md.Get(fencing.MetadataToken)[0] != "9" {
		t.Fatalf("metadata %v", md)
	}
}
