package fencetest

// What every store's signed-fence tests share: fences signed with the vectors' test seeds, a
// counting wrapper of the real store, a resource behind the guard over HTTP and gRPC, and the
// scenarios (refusals before the store, Kleppmann's, the store's backend gone).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/signedvectors"
)

// Signer signs fences with the vectors' test seeds: Key and OtherKey are the ring's (Ring),
// Outsider a key the ring does not hold.
type Signer struct {
	t                       testing.TB
	seeds                   map[string]string
	Key, OtherKey, Outsider string
	Ring                    *fencing.KeyRing
	RingKeys                []json.RawMessage
}

// NewSigner reads the vectors' keys.
func NewSigner(t testing.TB) *Signer {
	v := signedvectors.Load(t)
	ring, err := fencing.ParseKeys(v.Keys.Ring)
	if err != nil {
		t.Fatal(err)
	}
	var outsider struct{ Kid string }
	_ = json.Unmarshal(v.Keys.Outsider, &outsider)
	ids := ring.KeyIDs()
	return &Signer{t: t, seeds: v.Keys.Seeds, Key: ids[0], OtherKey: ids[1], Outsider: outsider.Kid, Ring: ring, RingKeys: v.RingKeys(t)}
}

// Fence is a fence signed by key for lock in namespace with token; leaseEnd zero states no end.
func (s *Signer) Fence(key, namespace, lock string, token uint64, leaseEnd time.Time) string {
	end := ""
	if !leaseEnd.IsZero() {
		end = fmt.Sprint(leaseEnd.UnixMilli())
	}
	body := strings.Join([]string{"v1", key, fencing.EncodeLock(namespace), fencing.EncodeLock(lock), fencing.FormatToken(token), end}, ":")
	return signedvectors.Sign(s.t, s.seeds[key], body)
}

// Valid is a fence of the ring's first key, namespace default, whose lease ends in an hour.
func (s *Signer) Valid(lock string, token uint64) string {
	return s.Fence(s.Key, fencing.DefaultNamespace, lock, token, time.Now().Add(time.Hour))
}

// Counting passes every call to the real store it wraps and counts them.
type Counting struct {
	Store fencing.Store
	calls atomic.Int64
}

// Check implements fencing.Store.
func (c *Counting) Check(ctx context.Context, lock string, token uint64) (fencing.Decision, error) {
	c.calls.Add(1)
	return c.Store.Check(ctx, lock, token)
}

// Calls is how many checks reached the store.
func (c *Counting) Calls() int64 { return c.calls.Load() }

// Headers are a request's fence header values by field: "fence", "lock", "token".
type Headers map[string][]string

// Signed is a holder's headers: the signed fence and the unsigned pair.
func Signed(fence, lock string, token uint64) Headers {
	return Headers{"fence": {fence}, "lock": {fencing.EncodeLock(lock)}, "token": {fencing.FormatToken(token)}}
}

// Resource is a register behind a guard, served over HTTP (PUT writes the body) and gRPC (the
// health service's Check and Watch), counting what reached it.
type Resource struct {
	t       testing.TB
	URL     string
	GRPC    healthpb.HealthClient
	mu      sync.Mutex
	value   string
	writes  map[string]int
	reached atomic.Int64
	// Admitted is the fence FromContext gave the last handler that ran.
	admitted atomic.Value
}

// Serve starts the resource behind guard.
func Serve(t testing.TB, guard fencing.Guard) *Resource {
	r := &Resource{t: t, writes: map[string]int{}}
	server := httptest.NewServer(guard.HTTP(http.HandlerFunc(r.serveHTTP)))
	t.Cleanup(server.Close)
	r.URL = server.URL
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := func(ctx context.Context) {
		r.reached.Add(1)
		if f, ok := fencing.FromContext(ctx); ok {
			r.admitted.Store(f)
		}
	}
	grpcServer := grpc.NewServer(
		grpc.ChainUnaryInterceptor(guard.Unary, func(ctx context.Context, req interface{}, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (interface{}, error) {
			seen(ctx)
			return next(ctx, req)
		}),
		grpc.ChainStreamInterceptor(guard.Stream, func(srv interface{}, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			seen(ss.Context())
			return next(srv, ss)
		}))
	healthpb.RegisterHealthServer(grpcServer, health.NewServer())
	go func() { _ = grpcServer.Serve(listener) }()
	t.Cleanup(grpcServer.Stop)
	conn, err := grpc.NewClient(listener.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r.GRPC = healthpb.NewHealthClient(conn)
	return r
}

func (r *Resource) serveHTTP(w http.ResponseWriter, req *http.Request) {
	r.reached.Add(1)
	if f, ok := fencing.FromContext(req.Context()); ok {
		r.admitted.Store(f)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method == http.MethodPut {
		body, _ := io.ReadAll(req.Body)
		r.value = string(body)
		r.writes[strings.SplitN(r.value, ":", 2)[0]]++
	}
	fmt.Fprint(w, r.value)
}

// Reached is how many requests reached the handlers.
func (r *Resource) Reached() int64 { return r.reached.Load() }

// Admitted is the fence the last handler read with fencing.FromContext.
func (r *Resource) Admitted() fencing.Fence {
	f, _ := r.admitted.Load().(fencing.Fence)
	return f
}

// Register is the value written last and each writer's accepted writes.
func (r *Resource) Register() (string, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	writes := map[string]int{}
	for k, v := range r.writes {
		writes[k] = v
	}
	return r.value, writes
}

// Put writes value over HTTP with these fence headers and returns the status and the JSON body
// of a refusal.
func (r *Resource) Put(value string, h Headers) (int, map[string]string) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPut, r.URL, strings.NewReader(value))
	names := map[string]string{"fence": fencing.HeaderFence, "lock": fencing.HeaderLock, "token": fencing.HeaderToken}
	for field, values := range h {
		for _, v := range values {
			req.Header.Add(names[field], v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body := map[string]string{}
	if resp.StatusCode != http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			r.t.Fatalf("status %d with a body that is not JSON: %v", resp.StatusCode, err)
		}
		if resp.Header.Get("Content-Type") != "application/json" {
			r.t.Fatalf("status %d with Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	return resp.StatusCode, body
}

// Call makes a gRPC call with these fence metadata values, unary (Check) or a stream (Watch's
// first answer), and returns its error.
func (r *Resource) Call(h Headers, stream bool) error {
	md := metadata.MD{}
	names := map[string]string{"fence": fencing.MetadataFence, "lock": fencing.MetadataLock, "token": fencing.MetadataToken}
	for field, values := range h {
		md.Append(names[field], values...)
	}
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), 20*time.Second)
	defer cancel()
	if !stream {
		_, err := r.GRPC.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	watch, err := r.GRPC.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = watch.Recv()
	}
	return err
}

// refusal is a request the guard must refuse before its store.
type refusal struct {
	name   string
	h      Headers
	status int
	error  string
	code   codes.Code
}

func refusals(s *Signer, lock string) []refusal {
	good := s.Valid(lock, 7)
	altered := []byte(good)
	if i := len(altered) - 40; altered[i] == 'A' { // one signature character (mid-signature: still canonical)
		altered[i] = 'B'
	} else {
		altered[i] = 'A'
	}
	forged := strings.Replace(good, ":7:", ":18446744073709551615:", 1)
	return []refusal{
		{"a forged token, unsigned", Headers{"lock": {fencing.EncodeLock(lock)}, "token": {"18446744073709551615"}}, 403, "signed_fence_required", codes.PermissionDenied},
		{"a forged token in a signed fence", Signed(forged, lock, 18446744073709551615), 403, "bad_fence_signature", codes.PermissionDenied},
		{"a fence of another lock", Signed(s.Valid(lock+"-other", 7), lock+"-other", 7), 403, "fence_for_another_lock", codes.PermissionDenied},
		{"a fence of another namespace", Signed(s.Fence(s.Key, "team-a", lock, 7, time.Now().Add(time.Hour)), lock, 7), 403, "fence_for_another_namespace", codes.PermissionDenied},
		{"a fence signed by an unknown key", Signed(s.Fence(s.Outsider, fencing.DefaultNamespace, lock, 7, time.Now().Add(time.Hour)), lock, 7), 403, "unknown_fence_key", codes.PermissionDenied},
		{"a truncated fence", Signed(good[:len(good)-5], lock, 7), 400, "malformed_fence", codes.InvalidArgument},
		{"an altered fence", Signed(string(altered), lock, 7), 403, "bad_fence_signature", codes.PermissionDenied},
		{"the signed fence twice", Headers{"fence": {good, good}}, 400, "malformed_fence", codes.InvalidArgument},
		{"the unsigned token twice", Headers{"fence": {good}, "lock": {fencing.EncodeLock(lock)}, "token": {"7", "7"}}, 400, "malformed_fence", codes.InvalidArgument},
		{"the unsigned token disagreeing", Signed(good, lock, 8), 400, "malformed_fence", codes.InvalidArgument},
		{"no fence", Headers{}, 400, "missing_fence", codes.InvalidArgument},
	}
}

// RefusalsBeforeStore sends each refusal case over HTTP and gRPC (unary and stream) to a guard on
// store and checks the status, the body, and that neither the store nor the handler saw it; then
// a good fence reaches both (the control that the count works).
func RefusalsBeforeStore(t *testing.T, store fencing.Store) {
	s, lock := NewSigner(t), RandomLock(t)
	counting := &Counting{Store: store}
	r := Serve(t, fencing.Guard{Store: counting, Keys: s.Ring, Lock: lock})
	for _, c := range refusals(s, lock) {
		status, body := r.Put("forger:1", c.h)
		if status != c.status || body["error"] != c.error || body["message"] == "" {
			t.Errorf("%s over HTTP: %d %v, want %d %s with a message", c.name, status, body, c.status, c.error)
		}
		for _, stream := range []bool{false, true} {
			if err := r.Call(c.h, stream); statusCode(err) != c.code {
				t.Errorf("%s over gRPC (stream %v): %v, want %v", c.name, stream, err, c.code)
			}
		}
	}
	if n := counting.Calls(); n != 0 {
		t.Fatalf("the store was asked %d times for fences refused before it", n)
	}
	if n := r.Reached(); n != 0 {
		t.Fatalf("the handler ran %d times for refused fences", n)
	}
	if status, body := r.Put("holder:1", Signed(s.Valid(lock, 7), lock, 7)); status != http.StatusOK {
		t.Fatalf("a good fence: %d %v", status, body)
	}
	if err := r.Call(Signed(s.Valid(lock, 7), lock, 7), true); err != nil {
		t.Fatalf("a good fence over gRPC: %v", err)
	}
	if counting.Calls() != 2 || r.Reached() != 2 {
		t.Fatalf("two good fences: the store saw %d, the handler %d (the counts do not work)", counting.Calls(), r.Reached())
	}
}

func statusCode(err error) codes.Code { return status.Code(err) }

// Kleppmann is the paused holder's scenario with signed fences on store: holder A writes with
// token a, B (token b > a) writes three times, A's delayed write is refused (409) and no update is
// lost; a forger's fences (unsigned, or signed by an outsider) are refused and B keeps writing.
// ForgerTakesOverAnUnsignedGuard is its negative control.
func Kleppmann(t *testing.T, store fencing.Store) {
	s, lock := NewSigner(t), RandomLock(t)
	r := Serve(t, fencing.Guard{Store: store, Keys: s.Ring, Lock: lock})
	a, b := uint64(5), uint64(6)
	want := func(what string, status int, value string, h Headers) {
		t.Helper()
		if got, body := r.Put(value, h); got != status {
			t.Fatalf("%s: %d %v, want %d", what, got, body, status)
		}
	}
	want("A's first write", 200, "first:1", Signed(s.Valid(lock, a), lock, a))
	for i := 1; i <= 3; i++ {
		want("B's write", 200, fmt.Sprintf("second:%d", i), Signed(s.Valid(lock, b), lock, b))
	}
	want("A's delayed write", 409, "first:2", Signed(s.Valid(lock, a), lock, a))
	want("the forger, unsigned", 403, "forger:1", Headers{"lock": {fencing.EncodeLock(lock)}, "token": {"18446744073709551615"}})
	want("the forger, signed by an outsider", 403, "forger:2",
		Signed(s.Fence(s.Outsider, fencing.DefaultNamespace, lock, 18446744073709551615, time.Now().Add(time.Hour)), lock, 18446744073709551615))
	want("B after the forger", 200, "second:4", Signed(s.Valid(lock, b), lock, b))
	if value, writes := r.Register(); value != "second:4" || writes["first"] != 1 || writes["second"] != 4 || writes["forger"] != 0 {
		t.Fatalf("the register holds %q after writes %v: an update was lost, refused or forged", value, writes)
	}
	if f := r.Admitted(); !f.Signed || f.Lock != lock || f.Token != b || f.Namespace != fencing.DefaultNamespace || f.KeyID != s.Key || !f.HasLeaseEnd {
		t.Fatalf("the handler read %+v", f)
	}
}

// ForgerTakesOverAnUnsignedGuard is the negative control of Kleppmann's forger: a guard without
// keys admits a forged unsigned token, and from then on refuses the real holder.
func ForgerTakesOverAnUnsignedGuard(t *testing.T, store fencing.Store) {
	lock := RandomLock(t)
	r := Serve(t, fencing.Guard{Store: store})
	h := func(token uint64) Headers {
		return Headers{"lock": {fencing.EncodeLock(lock)}, "token": {fencing.FormatToken(token)}}
	}
	if status, _ := r.Put("holder:1", h(6)); status != 200 {
		t.Fatalf("the holder: %d", status)
	}
	if status, _ := r.Put("forger:1", h(18446744073709551615)); status != 200 {
		t.Fatalf("the forger was refused (%d) by a guard without keys: this control cannot show what signing stops", status)
	}
	if status, _ := r.Put("holder:2", h(6)); status != 409 {
		t.Fatalf("the holder after the forger: %d, want 409", status)
	}
}

// Ceiling is a generous bound for a store's 1 s Timeout on a busy 2-core machine: what matters is
// that the guard does not hang.
const Ceiling = 3 * time.Second

// UnavailableWithinBound admits a fence on store, calls stop (which takes the store's backend
// away), then checks that HTTP answers 503 fence_store_unavailable naming the lock, and gRPC
// UNAVAILABLE, each within Ceiling; it returns the HTTP refusal's message.
func UnavailableWithinBound(t *testing.T, store fencing.Store, stop func()) string {
	s, lock := NewSigner(t), RandomLock(t)
	r := Serve(t, fencing.Guard{Store: store, Keys: s.Ring, Lock: lock})
	if status, body := r.Put("holder:1", Signed(s.Valid(lock, 3), lock, 3)); status != 200 {
		t.Fatalf("before the backend stops: %d %v", status, body)
	}
	stop()
	started := time.Now()
	status, body := r.Put("holder:2", Signed(s.Valid(lock, 4), lock, 4))
	took := time.Since(started)
	if status != http.StatusServiceUnavailable || body["error"] != "fence_store_unavailable" || body["lock"] != lock ||
		!strings.HasPrefix(body["message"], fmt.Sprintf("fence store unavailable for lock %q: ", lock)) {
		t.Fatalf("with the backend gone: %d %v", status, body)
	}
	if took > Ceiling {
		t.Fatalf("the 503 took %v, more than %v", took, Ceiling)
	}
	started = time.Now()
	if err := r.Call(Signed(s.Valid(lock, 4), lock, 4), false); statusCode(err) != codes.Unavailable {
		t.Fatalf("gRPC with the backend gone: %v", err)
	}
	if tookGRPC := time.Since(started); tookGRPC > Ceiling {
		t.Fatalf("UNAVAILABLE took %v, more than %v", tookGRPC, Ceiling)
	}
	if r.Reached() != 1 {
		t.Fatalf("the handler ran %d times, want once (before the backend stopped)", r.Reached())
	}
	t.Logf("503 after %v: %s", took.Round(time.Millisecond), body["message"])
	return body["message"]
}
