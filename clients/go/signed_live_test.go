//go:build signedlive

package holdfast

// Signed fences end to end, against the server clients/test-clients.sh starts with a fence signing
// key (HOLDFAST_SIGNED_ADDR; its ring at HOLDFAST_FENCE_KEYS_URL and in HOLDFAST_FENCE_KEYS_FILE).
// steps.sh runs it on its own (go test -tags signedlive); without them it fails rather than skip.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing"
	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// signedServer is the signing server's lock client and the ring fetched once from its /fence-keys.
func signedServer(t *testing.T) (holdfastv1.LockServiceClient, *fencing.KeyRing, string) {
	addr, url := os.Getenv("HOLDFAST_SIGNED_ADDR"), os.Getenv("HOLDFAST_FENCE_KEYS_URL")
	if addr == "" || url == "" {
		t.Fatal("HOLDFAST_SIGNED_ADDR and HOLDFAST_FENCE_KEYS_URL must name a server that signs fences and its /fence-keys (clients/test-clients.sh exports them)")
	}
	ring, err := fencing.FetchKeys(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	conn := dial(t, addr)
	t.Cleanup(func() { conn.Close() })
	return holdfastv1.NewLockServiceClient(conn), ring, addr
}

// verified checks that fence is a good signed fence of the ring for lock and token.
func verified(t *testing.T, ring *fencing.KeyRing, fence, lock string, token uint64, leaseEnd bool) fencing.Fence {
	t.Helper()
	f, err := ring.Verify(fence)
	if err != nil {
		t.Fatalf("the server's fence for %s: %v", lock, err)
	}
	if f.Lock != lock || f.Token != token || f.Namespace != fencing.DefaultNamespace || f.HasLeaseEnd != leaseEnd {
		t.Fatalf("the server's fence for %s (token %d) says %+v", lock, token, f)
	}
	return f
}

// The ring from /fence-keys, the file and AdminService.GetFenceKeys agree, signing key first.
func TestSignedLiveKeys(t *testing.T) {
	_, ring, addr := signedServer(t)
	conn := dial(t, addr)
	defer conn.Close()
	keys, err := holdfastv1.NewAdminServiceClient(conn).GetFenceKeys(context.Background(), &holdfastv1.GetFenceKeysRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range keys.Keys {
		if k.Algorithm != "Ed25519" || fencing.KeyID(k.PublicKey) != k.KeyId {
			t.Fatalf("GetFenceKeys lists %+v", k)
		}
		ids = append(ids, k.KeyId)
	}
	if !slices.Equal(ids, ring.KeyIDs()) || len(ids) == 0 || ids[0] != keys.SigningKeyId {
		t.Fatalf("GetFenceKeys lists %v (signing %s), /fence-keys %v", ids, keys.SigningKeyId, ring.KeyIDs())
	}
	if path := os.Getenv("HOLDFAST_FENCE_KEYS_FILE"); path != "" {
		fromFile, err := fencing.LoadKeysFile(path)
		if err != nil || !slices.Equal(fromFile.KeyIDs(), ids) {
			t.Fatalf("the JWK set file: %v, %v", fromFile, err)
		}
	}
}

// Every kind of grant carries a fence the ring verifies: Acquire and Renew (with a lease end),
// Hold (renewals bring fresh fences with later ends), AcquireSet members, and a Session's hold
// (no lease end) and acquire.
func TestSignedLiveGrantsCarryFences(t *testing.T) {
	client, ring, addr := signedServer(t)
	ctx := context.Background()
	name := randomName(t)
	acquired, err := client.Acquire(ctx, &holdfastv1.AcquireRequest{Name: name, TtlMs: 5000})
	if err != nil || !acquired.Acquired {
		t.Fatalf("acquire: %v %v", acquired, err)
	}
	before := uint64(time.Now().UnixMilli())
	first := verified(t, ring, acquired.SignedFence, name, acquired.FencingToken, true)
	renewed, err := client.Renew(ctx, &holdfastv1.RenewRequest{Name: name, Token: acquired.Token, TtlMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if again := verified(t, ring, renewed.SignedFence, name, acquired.FencingToken, true); again.LeaseEndMs <= first.LeaseEndMs || again.LeaseEndMs < before+50000 {
		t.Fatalf("the renewal's lease end %d after the grant's %d", again.LeaseEndMs, first.LeaseEndMs)
	}

	lease, err := Hold(ctx, client, randomName(t), Options{TTL: time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	initial := lease.SignedFence()
	held := verified(t, ring, initial, lease.Name(), lease.FencingToken(), true)
	for waited := time.Now(); lease.SignedFence() == initial; time.Sleep(20 * time.Millisecond) {
		if time.Since(waited) > 10*time.Second {
			t.Fatal("no renewal of the Hold brought a fresh signed fence in 10 s")
		}
	}
	if fresh := verified(t, ring, lease.SignedFence(), lease.Name(), lease.FencingToken(), true); fresh.LeaseEndMs <= held.LeaseEndMs {
		t.Fatalf("the renewal's fence ends at %d, the grant's at %d", fresh.LeaseEndMs, held.LeaseEndMs)
	}

	names := []string{randomName(t), randomName(t)}
	set, err := client.AcquireSet(ctx, &holdfastv1.AcquireSetRequest{Names: names, TtlMs: 5000})
	if err != nil || !set.Acquired || len(set.Members) != 2 {
		t.Fatalf("acquire set: %v %v", set, err)
	}
	for _, m := range set.Members {
		verified(t, ring, m.SignedFence, m.Name, m.FencingToken, true)
	}

	session, err := OpenSession(ctx, dial(t, addr), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	kept, err := session.Hold(ctx, randomName(t), Options{TTL: 5 * time.Second, Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	verified(t, ring, kept.SignedFence(), kept.Name(), kept.FencingToken(), false)
	viaSession, err := session.Acquire(ctx, &holdfastv1.AcquireRequest{Name: randomName(t), TtlMs: 5000})
	if err != nil || !viaSession.Acquired {
		t.Fatalf("session acquire: %v %v", viaSession, err)
	}
	f, err := ring.Verify(viaSession.SignedFence)
	if err != nil || f.Token != viaSession.FencingToken {
		t.Fatalf("the session acquire's fence: %+v %v", f, err)
	}
}

// signedRegister is a resource behind a guard with the server's ring, for one lock.
type signedRegister struct {
	mu     sync.Mutex
	value  string
	writes map[string]int
	url    string
}

func newSignedRegister(t *testing.T, guard fencing.Guard) *signedRegister {
	r := &signedRegister{writes: map[string]int{}}
	server := httptest.NewServer(guard.HTTP(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f, _ := fencing.FromContext(req.Context())
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if !f.Signed {
			http.Error(w, "the handler read no signed fence", http.StatusInternalServerError)
			return
		}
		r.value = string(body)
		r.writes[strings.SplitN(r.value, ":", 2)[0]]++
	})))
	t.Cleanup(server.Close)
	r.url = server.URL
	return r
}

// put writes value with a grant's fence as a holder sends it (SetSignedHeader) and returns the status.
func (r *signedRegister) put(t *testing.T, value, lock string, token uint64, fence string) int {
	req, _ := http.NewRequest(http.MethodPut, r.url, strings.NewReader(value))
	fencing.SetSignedHeader(req.Header, lock, token, fence)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// pausedHolder is A, granted name for 1 s by a unary Acquire it never renews (as a paused holder
// would not), writing "first:1" to reg, and B, a Hold granted once A's lease has ended.
func pausedHolder(t *testing.T, client holdfastv1.LockServiceClient, reg *signedRegister, name string) (*holdfastv1.AcquireResponse, *Lease) {
	a, err := client.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: name, TtlMs: 1000})
	if err != nil || !a.Acquired {
		t.Fatalf("A: %v %v", a, err)
	}
	if code := reg.put(t, "first:1", name, a.FencingToken, a.SignedFence); code != 200 {
		t.Fatalf("A's write within its lease: %d", code)
	}
	b, err := Hold(context.Background(), client, name, Options{TTL: 10 * time.Second, Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Release() })
	return a, b
}

// Kleppmann's scenario with real signed grants: A's unary grant (a 1 s lease it never renews, as a
// paused holder) writes, B is granted once A's lease has ended and writes three times (with
// Lease.FenceHeader), and A's late write is refused 409; no update is lost.
func TestSignedLiveKleppmann(t *testing.T) {
	client, ring, _ := signedServer(t)
	name := randomName(t)
	reg := newSignedRegister(t, fencing.Guard{Store: &fencing.MemoryStore{}, Keys: ring, Lock: name})
	a, b := pausedHolder(t, client, reg, name)
	for i := 1; i <= 3; i++ {
		req, _ := http.NewRequest(http.MethodPut, reg.url, strings.NewReader(fmt.Sprintf("second:%d", i)))
		b.FenceHeader(req.Header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("B's write %d: %v %v (a false refusal)", i, resp, err)
		}
		resp.Body.Close()
	}
	if code := reg.put(t, "first:2", name, a.FencingToken, a.SignedFence); code != http.StatusConflict {
		t.Fatalf("A's late write: %d, want 409", code)
	}
	if code := reg.put(t, "forger:1", name, 18446744073709551615, ""); code != http.StatusForbidden {
		t.Fatalf("an unsigned forged token: %d, want 403", code)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.value != "second:3" || reg.writes["first"] != 1 || reg.writes["second"] != 3 {
		t.Fatalf("the register holds %q after writes %v", reg.value, reg.writes)
	}
}

// The lease-end check with real grants: A's lease has ended (B holds the lock) but nobody newer
// wrote; with an allowance A's write is refused 409, without the check it is admitted (the control).
func TestSignedLiveLeaseEndCheck(t *testing.T) {
	client, ring, _ := signedServer(t)
	name := randomName(t)
	const skew = 200 * time.Millisecond
	checked := newSignedRegister(t, fencing.Guard{Store: &fencing.MemoryStore{}, Keys: ring, Lock: name, LeaseEndCheck: true, LeaseEndSkew: skew})
	unchecked := newSignedRegister(t, fencing.Guard{Store: &fencing.MemoryStore{}, Keys: ring, Lock: name})
	a, _ := pausedHolder(t, client, checked, name)
	end := verified(t, ring, a.SignedFence, name, a.FencingToken, true).LeaseEndMs
	time.Sleep(time.Until(time.UnixMilli(int64(end)).Add(skew + time.Millisecond))) // the guard's clock past end + skew
	if code := checked.put(t, "first:2", name, a.FencingToken, a.SignedFence); code != http.StatusConflict {
		t.Fatalf("A's write after its lease end, check on: %d, want 409", code)
	}
	if code := unchecked.put(t, "first:2", name, a.FencingToken, a.SignedFence); code != 200 {
		t.Fatalf("A's write after its lease end, check off: %d, want 200 (the control)", code)
	}
}
