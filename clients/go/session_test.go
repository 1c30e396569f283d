package holdfast

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// openTestSession opens a session on conn, closed when the test ends.
func openTestSession(t *testing.T, conn *grpc.ClientConn, opts SessionOptions) *Session {
	t.Helper()
	s, err := OpenSession(context.Background(), conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// holdMany holds n locks under s at once (n holds in flight), named prefix-0 ... prefix-(n-1).
func holdMany(t *testing.T, s *Session, prefix string, n int, opts Options) []*Lease {
	t.Helper()
	leases, errs := make([]*Lease, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range leases {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			leases[i], errs[i] = s.Hold(context.Background(), fmt.Sprintf("%s-%d", prefix, i), opts)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
	}
	return leases
}

// withPingInterval lowers the ping interval for the sessions this test opens.
func withPingInterval(t *testing.T, interval time.Duration) {
	was := sessionPingInterval
	sessionPingInterval = interval
	t.Cleanup(func() { sessionPingInterval = was })
}

func TestSessionHoldsManyLocksWithOneHeartbeatAndCloseFreesThem(t *testing.T) {
	client, addr := sharedServerAddr(t)
	s := openTestSession(t, dial(t, addr), SessionOptions{})
	const locks, ttl = 200, 900 * time.Millisecond
	prefix := randomName(t)
	leases := holdMany(t, s, prefix, locks, Options{TTL: ttl, Wait: 5 * time.Second, Owner: "go-session"})
	firstDeadlines := make([]time.Time, locks)
	for i, lease := range leases {
		firstDeadlines[i] = lease.Deadline()
	}

	// Several renewal ticks (about ttl/3 each), counted as they arrive.
	start, before := time.Now(), s.Stats().Renewed
	waitUntil(t, "three ttls and six renewed messages", func() bool { return time.Since(start) > 3*ttl && s.Stats().Renewed >= before+6 })
	elapsed, renewed := time.Since(start), s.Stats().Renewed-before
	for i, lease := range leases {
		if err := lease.Err(); err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		if !lease.Deadline().After(firstDeadlines[i].Add(2 * ttl)) {
			t.Fatalf("lease %d: deadline %v did not move forward from %v", i, lease.Deadline(), firstDeadlines[i])
		}
	}
	// A few messages per tick for the whole session (the watchdog renews what is due in rounds),
	// where a message per renewal would be 200 a tick.
	renewals := uint64(locks) * uint64(elapsed/(ttl/3))
	if renewed*10 > renewals {
		t.Fatalf("%d renewed messages in %v for about %d lock renewals: not far fewer", renewed, elapsed, renewals)
	}
	t.Logf("%d locks: %d renewed messages in %v, for about %d lock renewals", locks, renewed, elapsed, renewals)
	for i, lease := range leases { // another client sees every one held
		info := holders(t, client, lease.Name())
		if len(info.Holders) != 1 || info.Holders[0].FencingToken != lease.FencingToken() || info.Holders[0].Owner != "go-session" {
			t.Fatalf("lock %d: holders %v, want this session's grant", i, info.Holders)
		}
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, lease := range leases {
		waitDone(t, lease)
		if !errors.Is(lease.Err(), ErrReleased) {
			t.Fatalf("lease %d after Close: %v, want ErrReleased", i, lease.Err())
		}
	}
	for i := range leases { // all free at once: taken with no wait
		grant, err := client.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: fmt.Sprintf("%s-%d", prefix, i), TtlMs: 10_000})
		if err != nil || !grant.Acquired {
			t.Fatalf("lock %d after Close: %v %v, want it free", i, grant, err)
		}
	}
	var ended *SessionEndedError
	if _, err := s.Hold(context.Background(), prefix+"-after", Options{}); !errors.As(err, &ended) || ended.InFlight || !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("Hold after Close: %v, want a SessionEndedError for a closed session", err)
	}
}

func TestSessionOperationsAreAnsweredInAnyOrder(t *testing.T) {
	client, addr := sharedServerAddr(t)
	s := openTestSession(t, dial(t, addr), SessionOptions{})
	name := randomName(t)
	first, err := client.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: name, TtlMs: 10_000})
	if err != nil || !first.Acquired {
		t.Fatalf("Acquire: %v %v", first, err)
	}
	waiting := make(chan *holdfastv1.AcquireResponse, 1)
	go func() {
		grant, err := s.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: name, TtlMs: 10_000, WaitTimeoutMs: 10_000})
		if err != nil {
			t.Error(err)
		}
		waiting <- grant
	}()
	waitUntil(t, "the session's acquire to queue", func() bool { return holders(t, client, name).Waiters == 1 })
	// Sent after the acquire, answered while it still waits.
	info, err := s.Inspect(context.Background(), &holdfastv1.InspectRequest{Name: name})
	if err != nil || len(info.Holders) != 1 || info.Waiters != 1 {
		t.Fatalf("Inspect over the session: %v %v", info, err)
	}
	select {
	case grant := <-waiting:
		t.Fatalf("the acquire was answered before the lock was free: %v", grant)
	default:
	}
	if _, err := s.Release(context.Background(), &holdfastv1.ReleaseRequest{Name: name, Token: first.Token}); err != nil {
		t.Fatal(err)
	}
	grant := <-waiting
	if grant == nil || !grant.Acquired || grant.FencingToken <= first.FencingToken {
		t.Fatalf("the waiting acquire got %v", grant)
	}
	if _, err := s.Renew(context.Background(), &holdfastv1.RenewRequest{Name: name, Token: grant.Token, TtlMs: 5_000}); err != nil {
		t.Fatal(err)
	}
}

func TestSessionReleaseAndContextGiveBackOneHold(t *testing.T) {
	client, addr := sharedServerAddr(t)
	s := openTestSession(t, dial(t, addr), SessionOptions{})
	prefix := randomName(t)
	leases := holdMany(t, s, prefix, 2, Options{TTL: 3 * time.Second, Wait: time.Second})
	if err := leases[0].Release(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(leases[0].Err(), ErrReleased) || len(holders(t, client, leases[0].Name()).Holders) != 0 {
		t.Fatalf("after Release: %v, holders %v", leases[0].Err(), holders(t, client, leases[0].Name()).Holders)
	}
	checkCancelledContextFreesTheLock(t, client, prefix+"-ctx", func(ctx context.Context) (*Lease, error) {
		return s.Hold(ctx, prefix+"-ctx", Options{TTL: 3 * time.Second, Wait: time.Second})
	})
	// The other lock is still held, and the session goes on.
	if err := leases[1].Err(); err != nil || len(holders(t, client, leases[1].Name()).Holders) != 1 {
		t.Fatalf("the other lease: %v", err)
	}
	if got := s.Stats().Holds; got != 1 {
		t.Fatalf("the session holds %d locks, want 1", got)
	}
}

func TestSessionBadOperationFailsAsTheUnaryCall(t *testing.T) {
	client, addr := sharedServerAddr(t)
	s := openTestSession(t, dial(t, addr), SessionOptions{})
	sameError := func(what string, overSession, unary error) {
		t.Helper()
		if status.Code(unary) != codes.InvalidArgument { // the control: the unary call does fail
			t.Fatalf("%s: unary error %v, want InvalidArgument", what, unary)
		}
		if status.Code(overSession) != status.Code(unary) || status.Convert(overSession).Message() != status.Convert(unary).Message() {
			t.Fatalf("%s over the session: %v; the unary call: %v", what, overSession, unary)
		}
	}
	_, overSession := s.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: "", TtlMs: 1000})
	_, unary := client.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: "", TtlMs: 1000})
	sameError("acquire with no name", overSession, unary)
	_, overSession = s.Hold(context.Background(), randomName(t), Options{TTL: -time.Second})
	_, unary = Hold(context.Background(), client, randomName(t), Options{TTL: -time.Second})
	sameError("hold with a negative ttl", overSession, unary)
	// The session goes on.
	lease, err := s.Hold(context.Background(), randomName(t), Options{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestSessionNotAcquiredInTime(t *testing.T) {
	client, addr := sharedServerAddr(t)
	s := openTestSession(t, dial(t, addr), SessionOptions{})
	name := randomName(t)
	first, err := Hold(context.Background(), client, name, Options{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	if _, err := s.Hold(context.Background(), name, Options{Wait: 200 * time.Millisecond}); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
}

// checkSessionLoss checks a lease lost with its session: when (no later than its deadline) and why.
func checkSessionLoss(t *testing.T, lease *Lease, deadline time.Time, addr, why string) {
	t.Helper()
	waitDone(t, lease)
	// Done closes at the loss; timers fire a little late on a busy machine, never early.
	if late := time.Since(deadline); late > 500*time.Millisecond {
		t.Fatalf("lease %s was reported lost %v after its deadline", lease.Name(), late)
	}
	var lost *LostError
	if !errors.As(lease.Err(), &lost) || !strings.Contains(lost.Reason, why) || (addr != "" && !strings.Contains(lost.Reason, addr)) {
		t.Fatalf("Err() = %v, want a LostError naming %q %s", lease.Err(), why, addr)
	}
}

// checkInFlightError checks the error of an operation in flight when its session ended.
func checkInFlightError(t *testing.T, err error, addr string) {
	t.Helper()
	var ended *SessionEndedError
	if !errors.As(err, &ended) || !ended.InFlight || !strings.Contains(err.Error(), addr) ||
		!strings.Contains(err.Error(), "may or may not have taken effect") || status.Code(err) != codes.Unavailable {
		t.Fatalf("in-flight operation: %v, want a SessionEndedError naming %s that may or may not have taken effect", err, addr)
	}
}

// queueBehind starts a session acquire that waits for a lock another client holds.
func queueBehind(t *testing.T, s *Session, direct holdfastv1.LockServiceClient) <-chan error {
	t.Helper()
	name := randomName(t)
	if grant, err := direct.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: name, TtlMs: 30_000}); err != nil || !grant.Acquired {
		t.Fatalf("Acquire: %v %v", grant, err)
	}
	failed := make(chan error, 1)
	go func() {
		_, err := s.Acquire(context.Background(), &holdfastv1.AcquireRequest{Name: name, WaitTimeoutMs: 20_000})
		failed <- err
	}()
	waitUntil(t, "the session's acquire to queue", func() bool { return holders(t, direct, name).Waiters == 1 })
	return failed
}

func TestSessionLeasesLostWhenTheServerIsKilled(t *testing.T) {
	p := startProcesses(t)
	direct := holdfastv1.NewLockServiceClient(dial(t, p.addr))
	s := openTestSession(t, dial(t, p.addr), SessionOptions{})
	leases := holdMany(t, s, randomName(t), 3, Options{TTL: 2 * time.Second, Wait: time.Second})
	inFlight := queueBehind(t, s, direct)
	deadlines := []time.Time{leases[0].Deadline(), leases[1].Deadline(), leases[2].Deadline()}
	if err := p.server.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for i, lease := range leases {
		checkSessionLoss(t, lease, deadlines[i], p.addr, "the session with holdfast at")
	}
	checkInFlightError(t, <-inFlight, p.addr)
	var ended *SessionEndedError
	if _, err := s.Hold(context.Background(), randomName(t), Options{}); !errors.As(err, &ended) || ended.InFlight {
		t.Fatalf("Hold on the ended session: %v, want a SessionEndedError", err)
	}
}

// A frozen server sends nothing: each lease is lost at its own deadline.
func TestSessionLeasesLostAtTheirDeadlineWhenTheServerFreezes(t *testing.T) {
	p := startProcesses(t)
	s := openTestSession(t, dial(t, p.addr), SessionOptions{CallTimeout: 30 * time.Second})
	leases := holdMany(t, s, randomName(t), 3, Options{TTL: 600 * time.Millisecond, Wait: time.Second})
	p.pause(t)
	defer p.resume()
	for _, lease := range leases {
		checkSessionLoss(t, lease, lease.Deadline(), "", "local deadline")
	}
	if held := s.Stats().Holds; held != 0 { // given back: nobody counts on them any more
		t.Fatalf("the session still keeps %d lost holds", held)
	}
}

// A network cut without an error (a stalled proxy) is found by the ping: every lease is lost at
// once, well before its deadline, and operations in flight fail.
func TestSessionCutOffFoundByThePing(t *testing.T) {
	withPingInterval(t, 100*time.Millisecond)
	p := startProcesses(t)
	direct := holdfastv1.NewLockServiceClient(dial(t, p.addr))
	proxy := startProxy(t, p.addr)
	proxied := dial(t, proxy.addr)
	s := openTestSession(t, proxied, SessionOptions{CallTimeout: 500 * time.Millisecond})
	leases := holdMany(t, s, randomName(t), 3, Options{TTL: 20 * time.Second, Wait: time.Second})
	waitUntil(t, "a pong", func() bool { return s.Stats().Pongs > 0 })
	inFlight := queueBehind(t, s, direct)
	proxy.stall()
	for _, lease := range leases {
		waitDone(t, lease)
		var lost *LostError
		if !errors.As(lease.Err(), &lost) || !strings.Contains(lost.Reason, "no pong within") || !strings.Contains(lost.Reason, proxy.addr) {
			t.Fatalf("Err() = %v, want lost for the missing pong", lease.Err())
		}
		if left := time.Until(lease.Deadline()); left < 5*time.Second {
			t.Fatalf("lost only %v before its deadline: the ping did not find the cut", left)
		}
	}
	checkInFlightError(t, <-inFlight, proxy.addr)
	// The control: the server still answers on another connection.
	if _, err := direct.Inspect(context.Background(), &holdfastv1.InspectRequest{Name: "x"}); err != nil {
		t.Fatal(err)
	}
}

// The pong re-anchors the deadline: with the open anchor pushed 2 s into the past (a safe lie: an
// earlier anchor only gives earlier deadlines), a deadline counted from the open is 2 s short,
// one counted from a pong is not.
func TestSessionPongMovesTheAnchor(t *testing.T) {
	withPingInterval(t, 300*time.Millisecond)
	_, addr := sharedServerAddr(t)
	s := openTestSession(t, dial(t, addr), SessionOptions{})
	const shift, ttl = 2 * time.Second, 4 * time.Second
	s.mu.Lock()
	s.anchors.opened.sentAt = s.anchors.opened.sentAt.Add(-shift)
	s.mu.Unlock()
	lease, err := s.Hold(context.Background(), randomName(t), Options{TTL: ttl, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	// The grant is counted from the open: no pong can come before the session holds a lock.
	if left := time.Until(lease.Deadline()); left > ttl-shift {
		t.Fatalf("the grant's deadline is %v away, want at most %v (counted from the open)", left, ttl-shift)
	}
	waitUntil(t, "a renewal counted from a pong", func() bool { return time.Until(lease.Deadline()) > ttl-shift+time.Second })
	if err := lease.Err(); err != nil || s.Stats().Pongs == 0 {
		t.Fatalf("Err() = %v, pongs %d", err, s.Stats().Pongs)
	}
	s.mu.Lock()
	opened, latest := s.anchors.opened, s.anchors.pongs[len(s.anchors.pongs)-1]
	s.mu.Unlock()
	if !latest.sentAt.After(opened.sentAt.Add(shift)) || latest.receivedAfter <= 0 {
		t.Fatalf("latest pong anchor %+v, want one after the open", latest)
	}
}

// The server's `lost` for one hold ends that lease alone, as Hold's lost event does.
func TestSessionLostReportedForItsHoldOnly(t *testing.T) {
	client, redisAddr, addr := sharedServerAt(t)
	s := openTestSession(t, dial(t, addr), SessionOptions{})
	leases := holdMany(t, s, randomName(t), 2, Options{TTL: 600 * time.Millisecond, Wait: time.Second})
	if _, err := redisCommand(redisAddr, append([]string{"DEL"}, lockKeys(leases[0].Name())...)...); err != nil {
		t.Fatal(err)
	}
	waitDone(t, leases[0])
	var lost *LostError
	if !errors.As(leases[0].Err(), &lost) || lost.Code != holdfastv1.LostReason_LOST_REASON_EXPIRED {
		t.Fatalf("Err() = %v, want a LostError with LOST_REASON_EXPIRED", leases[0].Err())
	}
	if err := leases[0].Release(); !errors.As(err, &lost) {
		t.Fatalf("Release after loss = %v, want the LostError", err)
	}
	// The other lease goes on being renewed.
	kept := leases[1].Deadline()
	waitUntil(t, "a renewal of the other lease", func() bool { return leases[1].Deadline().After(kept) })
	if err := leases[1].Err(); err != nil || len(holders(t, client, leases[1].Name()).Holders) != 1 {
		t.Fatalf("the other lease: %v", err)
	}
}
