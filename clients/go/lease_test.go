package holdfast

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

const waitLimit = 10 * time.Second

func holders(t *testing.T, client holdfastv1.LockServiceClient, name string) *holdfastv1.InspectResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := client.Inspect(ctx, &holdfastv1.InspectRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// waitUntil polls the server's view (Inspect): the server pushes no event for queueing.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > waitLimit {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func waitDone(t *testing.T, lease *Lease) {
	t.Helper()
	select {
	case <-lease.Done():
	case <-time.After(waitLimit):
		t.Fatal("lease.Done() did not close")
	}
}

func TestHoldAndRelease(t *testing.T) {
	client, _ := sharedServer(t)
	name := randomName(t)
	lease, err := Hold(context.Background(), client, name, Options{TTL: 3 * time.Second, Wait: time.Second, Owner: "go-test"})
	if err != nil {
		t.Fatal(err)
	}
	if lease.FencingToken() == 0 || lease.Token() == "" {
		t.Fatalf("empty grant: fencing %d token %q", lease.FencingToken(), lease.Token())
	}
	info := holders(t, client, name)
	if len(info.Holders) != 1 || info.Holders[0].Owner != "go-test" || info.Holders[0].FencingToken != lease.FencingToken() {
		t.Fatalf("holders = %v", info.Holders)
	}
	if err := lease.Release(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, lease)
	if !errors.Is(lease.Err(), ErrReleased) {
		t.Fatalf("Err() = %v, want ErrReleased", lease.Err())
	}
	if info := holders(t, client, name); len(info.Holders) != 0 {
		t.Fatalf("holders after Release = %v", info.Holders)
	}
}

func TestRenewalsKeepTheLease(t *testing.T) {
	client, _ := sharedServer(t)
	lease, err := Hold(context.Background(), client, randomName(t), Options{TTL: 300 * time.Millisecond, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	first := lease.Deadline()
	waitUntil(t, "two renewals", func() bool { return lease.Deadline().After(first.Add(300 * time.Millisecond)) })
	if lease.Err() != nil {
		t.Fatal(lease.Err())
	}
}

func TestReleaseGivesBackOnlyItsOwnReentrantHold(t *testing.T) {
	client, _ := sharedServer(t)
	name := randomName(t)
	opts := Options{TTL: 600 * time.Millisecond, Wait: time.Second, Owner: "same"}
	outer, err := Hold(context.Background(), client, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Release()
	inner, err := Hold(context.Background(), client, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if inner.Token() != outer.Token() || inner.HoldID() == outer.HoldID() {
		t.Fatalf("tokens %q %q, hold ids %q %q: want one grant with two holds", inner.Token(), outer.Token(), inner.HoldID(), outer.HoldID())
	}
	if err := inner.Release(); err != nil {
		t.Fatal(err)
	}
	// Two renewals of the outer hold after the inner one was given back.
	first := outer.Deadline()
	waitUntil(t, "two renewals", func() bool { return outer.Deadline().After(first.Add(300*time.Millisecond)) || outer.Err() != nil })
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	if info := holders(t, client, name); len(info.Holders) != 1 || info.Holders[0].HoldCount != 1 {
		t.Fatalf("holders = %v, want the outer hold alone", info.Holders)
	}
	if err := outer.Release(); err != nil {
		t.Fatal(err)
	}
	if info := holders(t, client, name); len(info.Holders) != 0 {
		t.Fatalf("holders after both releases = %v", info.Holders)
	}
}

func TestSecondHolderWaitsForTheFirst(t *testing.T) {
	client, _ := sharedServer(t)
	name := randomName(t)
	first, err := Hold(context.Background(), client, name, Options{TTL: 3 * time.Second, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	type result struct {
		lease          *Lease
		err            error
		releasedBefore bool
	}
	second := make(chan result, 1)
	go func() {
		lease, err := Hold(context.Background(), client, name, Options{TTL: 3 * time.Second, Wait: waitLimit})
		select {
		case <-released:
			second <- result{lease, err, true}
		default:
			second <- result{lease, err, false}
		}
	}()
	waitUntil(t, "the second caller to queue", func() bool { return holders(t, client, name).Waiters == 1 })
	close(released)
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	got := <-second
	if got.err != nil {
		t.Fatal(got.err)
	}
	defer got.lease.Release()
	if !got.releasedBefore {
		t.Fatal("the second holder got the lock before the first released it")
	}
	if got.lease.FencingToken() <= first.FencingToken() {
		t.Fatalf("fencing token %d is not above %d", got.lease.FencingToken(), first.FencingToken())
	}
}

func TestNotAcquiredInTime(t *testing.T) {
	client, _ := sharedServer(t)
	name := randomName(t)
	first, err := Hold(context.Background(), client, name, Options{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	start := time.Now()
	_, err = Hold(context.Background(), client, name, Options{Wait: 200 * time.Millisecond})
	if !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatalf("gave up after %v, before the wait", time.Since(start))
	}
}

func TestLostWhenTheGrantIsDeleted(t *testing.T) {
	client, redisAddr := sharedServer(t)
	name := randomName(t)
	lease, err := Hold(context.Background(), client, name, Options{TTL: 600 * time.Millisecond, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redisCommand(redisAddr, append([]string{"DEL"}, lockKeys(name)...)...); err != nil {
		t.Fatal(err)
	}
	waitDone(t, lease)
	var lost *LostError
	if !errors.As(lease.Err(), &lost) || lost.Code != holdfastv1.LostReason_LOST_REASON_EXPIRED {
		t.Fatalf("Err() = %v, want a LostError with LOST_REASON_EXPIRED", lease.Err())
	}
	if err := lease.Release(); !errors.As(err, &lost) {
		t.Fatalf("Release after loss = %v, want the LostError", err)
	}
}

func TestCancelledContextEndsTheLease(t *testing.T) {
	client, _ := sharedServer(t)
	name := randomName(t)
	checkCancelledContextFreesTheLock(t, client, name, func(ctx context.Context) (*Lease, error) {
		return Hold(ctx, client, name, Options{TTL: 3 * time.Second, Wait: time.Second})
	})
}

// checkCancelledContextFreesTheLock holds name under a context, then cancels it: the lease ends
// with context.Canceled and the server frees the lock.
func checkCancelledContextFreesTheLock(t *testing.T, client holdfastv1.LockServiceClient, name string, hold func(context.Context) (*Lease, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lease, err := hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitDone(t, lease)
	if !errors.Is(lease.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want context.Canceled", lease.Err())
	}
	waitUntil(t, "the server to release the cancelled hold", func() bool { return len(holders(t, client, name).Holders) == 0 })
}

// A frozen server sends nothing, not even lost: the client's own deadline must fire.
func TestLostAtTheLocalDeadline(t *testing.T) {
	p := startProcesses(t)
	conn := dial(t, p.addr)
	defer conn.Close()
	client := holdfastv1.NewLockServiceClient(conn)
	name := randomName(t)
	lease, err := Hold(context.Background(), client, name, Options{TTL: 500 * time.Millisecond, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.pause(t)
	waitDone(t, lease)
	// The local deadline is no later than the lease's end in Redis (both wall clocks of this machine).
	reply, err := redisCommand(p.redisAddr, "ZSCORE", lockKeys(name)[0], lease.Token())
	if err != nil {
		t.Fatal(err)
	}
	expiryMs, err := strconv.ParseFloat(reply, 64)
	if err != nil {
		t.Fatalf("ZSCORE = %q: %v", reply, err)
	}
	if deadlineMs := lease.Deadline().UnixMilli(); float64(deadlineMs) > expiryMs {
		t.Fatalf("local deadline %d ms is after the lease's end in Redis, %v ms", deadlineMs, expiryMs)
	}
	var lost *LostError
	if !errors.As(lease.Err(), &lost) || lost.Code != holdfastv1.LostReason_LOST_REASON_UNSPECIFIED ||
		!strings.Contains(lost.Reason, "local deadline") {
		t.Fatalf("Err() = %v, want the local deadline", lease.Err())
	}
	p.resume()
	_ = lease.Release()
}

// A real stalled network (stallingProxy) holds the grant back until the lease could have ended
// and someone else has the lock: Hold must not hand it out.
func TestAGrantThatArrivesAfterItsLeaseCouldHaveEndedIsLost(t *testing.T) {
	// Short keepalive: the server gives up on a stalled connection within half a second.
	p := startProcesses(t, "--keepalive-time-ms", "200", "--keepalive-timeout-ms", "300")
	directConn := dial(t, p.addr)
	defer directConn.Close()
	direct := holdfastv1.NewLockServiceClient(directConn)
	proxy := startProxy(t, p.addr)
	proxiedConn := dial(t, proxy.addr)
	defer proxiedConn.Close()
	name := randomName(t)
	owners := func() []string {
		var names []string
		for _, h := range holders(t, direct, name).Holders {
			names = append(names, h.Owner)
		}
		return names
	}
	acquire := func(owner string) *holdfastv1.AcquireResponse {
		ctx, cancel := context.WithTimeout(context.Background(), 3*waitLimit)
		defer cancel()
		grant, err := direct.Acquire(ctx, &holdfastv1.AcquireRequest{Name: name, Owner: owner, TtlMs: 30_000, WaitTimeoutMs: 20_000})
		if err != nil || !grant.Acquired {
			t.Fatalf("Acquire for %s: %v %v", owner, grant, err)
		}
		return grant
	}

	first := acquire("first")
	type result struct {
		lease *Lease
		err   error
	}
	held := make(chan result, 1)
	go func() {
		lease, err := Hold(context.Background(), holdfastv1.NewLockServiceClient(proxiedConn), name,
			Options{TTL: 300 * time.Millisecond, Wait: 20 * time.Second, Owner: "late"})
		held <- result{lease, err}
	}()
	waitUntil(t, "the Hold to queue", func() bool { return holders(t, direct, name).Waiters == 1 })
	proxy.stall() // the grant is made, but its answer is held back
	if _, err := direct.Release(context.Background(), &holdfastv1.ReleaseRequest{Name: name, Token: first.Token}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the grant to the stalled Hold", func() bool { o := owners(); return len(o) == 1 && o[0] == "late" })
	// The server gives up on the stalled connection and the lease runs out: someone else gets it.
	acquire("taker")
	select {
	case r := <-held:
		t.Fatalf("Hold returned while the network was stalled: %v %v", r.lease, r.err)
	default:
	}
	proxy.resume()

	var r result
	select {
	case r = <-held:
	case <-time.After(waitLimit):
		t.Fatal("Hold did not return after the network came back")
	}
	var lost *LostError
	if r.lease != nil || !errors.As(r.err, &lost) || !strings.Contains(lost.Reason, "arrived after the lease could have ended") {
		t.Fatalf("Hold = %v, %v; want no lease and a LostError for a late grant", r.lease, r.err)
	}
	if o := owners(); len(o) != 1 || o[0] != "taker" {
		t.Fatalf("holders = %v, want only the taker", o)
	}
}
