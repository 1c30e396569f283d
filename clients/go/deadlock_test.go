package holdfast

// Deadlocks against the live server (detection on, its default --deadlock-timeout-ms): two
// parties each hold one lock, then each waits for the other's. One wait ends with a
// *DeadlockError long before its wait timeout, the server's message naming both locks and both
// owners; once that side gives back what it holds, the other is granted. Through Hold on a plain
// grpc-go connection (Hold's own classification; with a Watch on the ended wait's lock), the
// unary Acquire on a connection from Dial (its interceptor), and a Session.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

const (
	deadlockWait  = 20 * time.Second // each wait's timeout: the deadlock must end one long before it
	abortedWithin = 10 * time.Second // generous on a busy 2-core machine; the server answers about 1 s after the cycle forms
	deadlockTTL   = 30 * time.Second
)

// crossing is two parties (owners or sessions), party i holding names[i] and then waiting for the
// other's. hold and wait return what gives the lock back; both may be called more than once.
type crossing struct {
	names       [2]string
	hold        func(party int, name string) (release func(), err error)
	wait        func(party int, name string) (release func(), err error)
	beforeWaits func()
}

type waitEnded struct {
	party   int
	release func()
	err     error
}

func newCrossing(t *testing.T) *crossing {
	return &crossing{names: [2]string{randomName(t), randomName(t)}}
}

// run returns the party whose wait was ended and its error, after the other's was granted.
func (c *crossing) run(t *testing.T) (int, *DeadlockError) {
	t.Helper()
	releases := [2]func(){}
	for i, name := range c.names {
		release, err := c.hold(i, name)
		if err != nil {
			t.Fatalf("party %d holding %q: %v", i, name, err)
		}
		releases[i] = release
		t.Cleanup(release)
	}
	if c.beforeWaits != nil {
		c.beforeWaits()
	}
	ends := make(chan waitEnded, 2)
	started := time.Now()
	for i := range 2 {
		go func() {
			release, err := c.wait(i, c.names[1-i])
			ends <- waitEnded{i, release, err}
		}()
	}
	first := nextEnd(t, ends)
	elapsed := time.Since(started)
	if first.err == nil {
		first.release()
		t.Fatalf("the first wait to end (party %d) was granted: no deadlock was broken", first.party)
	}
	var deadlock *DeadlockError
	if !errors.As(first.err, &deadlock) || !errors.Is(first.err, ErrDeadlock) {
		t.Fatalf("the first wait to end: %T %v, want a *DeadlockError", first.err, first.err)
	}
	if elapsed > abortedWithin {
		t.Fatalf("the deadlock was broken only after %v", elapsed)
	}
	c.checkMessage(t, first, deadlock)
	releases[first.party]() // the victim gives back what it holds: the other is granted
	second := nextEnd(t, ends)
	if second.err != nil {
		t.Fatalf("the other wait (party %d): %v", second.party, second.err)
	}
	second.release()
	return first.party, deadlock
}

func (c *crossing) checkMessage(t *testing.T, ended waitEnded, deadlock *DeadlockError) {
	t.Helper()
	if status.Code(ended.err) != codes.Aborted || deadlock.Lock != c.names[1-ended.party] || !strings.HasPrefix(deadlock.Message, "deadlock: ") {
		t.Fatalf("%v (code %v, lock %q): want ABORTED, the waited lock %q and the server's message", ended.err, status.Code(ended.err), deadlock.Lock, c.names[1-ended.party])
	}
	for _, name := range c.names {
		if !strings.Contains(deadlock.Message, fmt.Sprintf("lock %q", name)) {
			t.Fatalf("%q does not name lock %q", deadlock.Message, name)
		}
	}
	if !strings.Contains(ended.err.Error(), deadlock.Message) {
		t.Fatalf("%q does not carry the server's message", ended.err.Error())
	}
}

func nextEnd(t *testing.T, ends <-chan waitEnded) waitEnded {
	t.Helper()
	select {
	case ended := <-ends:
		return ended
	case <-time.After(deadlockWait + 10*time.Second):
		t.Fatal("no wait ended")
		return waitEnded{}
	}
}

// heldBy holds a lock with Hold for owner.
func heldBy(client holdfastv1.LockServiceClient, owner string, wait time.Duration) func(int, string) (func(), error) {
	return func(_ int, name string) (func(), error) {
		lease, err := Hold(context.Background(), client, name, Options{TTL: deadlockTTL, Wait: wait, Owner: owner})
		if err != nil {
			return nil, err
		}
		return func() { _ = lease.Release() }, nil
	}
}

// byOwner runs party i's hold or wait as owners[i].
func byOwner(owners [2]string, as func(owner string) func(int, string) (func(), error)) func(int, string) (func(), error) {
	return func(party int, name string) (func(), error) { return as(owners[party])(party, name) }
}

func (c *crossing) checkOwners(t *testing.T, owners [2]string, deadlock *DeadlockError) {
	t.Helper()
	for _, owner := range owners {
		if !strings.Contains(deadlock.Message, fmt.Sprintf("owner %q", owner)) {
			t.Fatalf("%q does not name owner %q", deadlock.Message, owner)
		}
	}
}

// watchEvents sends a lock's Watch responses; it returns once the first (the state) has come.
func watchEvents(t *testing.T, client holdfastv1.LockServiceClient, name string) <-chan *holdfastv1.WatchResponse {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := client.Watch(ctx, &holdfastv1.WatchRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	state, err := stream.Recv()
	if err != nil || state.Event != holdfastv1.WatchEvent_WATCH_EVENT_STATE {
		t.Fatalf("watch %q: %v %v, want its state first", name, state, err)
	}
	responses := make(chan *holdfastv1.WatchResponse, 64)
	go func() {
		defer close(responses)
		for {
			response, err := stream.Recv()
			if err != nil {
				return
			}
			responses <- response
		}
	}()
	return responses
}

func TestDeadlockHoldEndsOneWaitAndWatchSeesIt(t *testing.T) {
	client, _ := sharedServer(t) // plain grpc-go: Hold classifies the error itself
	c := newCrossing(t)
	owners := [2]string{randomName(t), randomName(t)}
	c.hold = byOwner(owners, func(owner string) func(int, string) (func(), error) { return heldBy(client, owner, 0) })
	c.wait = byOwner(owners, func(owner string) func(int, string) (func(), error) { return heldBy(client, owner, deadlockWait) })
	var watches [2]<-chan *holdfastv1.WatchResponse
	c.beforeWaits = func() {
		for i, name := range c.names {
			watches[i] = watchEvents(t, client, name)
		}
	}
	victim, deadlock := c.run(t)
	c.checkOwners(t, owners, deadlock)
	// A watcher of the ended wait's lock saw the deadlock event, with the same words.
	giveUp := time.After(abortedWithin)
	for {
		select {
		case response, open := <-watches[1-victim]:
			if !open {
				t.Fatal("the watch ended without the deadlock event")
			}
			if response.Event != holdfastv1.WatchEvent_WATCH_EVENT_DEADLOCK {
				continue
			}
			if response.Deadlock != deadlock.Message {
				t.Fatalf("the watch's deadlock %q, want the error's %q", response.Deadlock, deadlock.Message)
			}
			return
		case <-giveUp:
			t.Fatal("no deadlock event on the watch")
		}
	}
}

func TestDeadlockAcquireOnADialledConnection(t *testing.T) {
	_, addr := sharedServerAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := Dial(ctx, addr, Security{}) // its interceptor turns the unary call's status into *DeadlockError
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := holdfastv1.NewLockServiceClient(conn)
	c := newCrossing(t)
	owners := [2]string{randomName(t), randomName(t)}
	c.hold = byOwner(owners, func(owner string) func(int, string) (func(), error) { return heldBy(client, owner, 0) })
	c.wait = func(party int, name string) (func(), error) {
		request := &holdfastv1.AcquireRequest{Name: name, Owner: owners[party], TtlMs: deadlockTTL.Milliseconds(), WaitTimeoutMs: deadlockWait.Milliseconds()}
		grant, err := client.Acquire(context.Background(), request)
		if err != nil {
			return nil, err
		}
		if !grant.Acquired {
			return nil, fmt.Errorf("lock %q not acquired", name)
		}
		return func() {
			_, _ = client.Release(context.Background(), &holdfastv1.ReleaseRequest{Name: name, Token: grant.Token})
		}, nil
	}
	_, deadlock := c.run(t)
	c.checkOwners(t, owners, deadlock)
}

func TestDeadlockSessionHoldsWithoutOwnersTheSessionIsTheIdentity(t *testing.T) {
	_, addr := sharedServerAddr(t)
	conn := dial(t, addr)
	sessions := [2]*Session{openTestSession(t, conn, SessionOptions{}), openTestSession(t, conn, SessionOptions{})}
	c := newCrossing(t)
	holdUnder := func(wait time.Duration) func(int, string) (func(), error) {
		return func(party int, name string) (func(), error) {
			lease, err := sessions[party].Hold(context.Background(), name, Options{TTL: deadlockTTL, Wait: wait})
			if err != nil {
				return nil, err
			}
			return func() { _ = lease.Release() }, nil
		}
	}
	c.hold, c.wait = holdUnder(0), holdUnder(deadlockWait)
	_, deadlock := c.run(t)
	identities := map[string]bool{}
	for _, part := range strings.Split(deadlock.Message, `owner "session:`)[1:] {
		identities[strings.SplitN(part, `"`, 2)[0]] = true
	}
	if len(identities) != 2 {
		t.Fatalf("%q: want two sessions named as owners", deadlock.Message)
	}
}
