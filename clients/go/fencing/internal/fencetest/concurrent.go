package fencetest

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing"
)

type call struct {
	token      uint64
	start, end time.Time
	decision   fencing.Decision
}

// Concurrent sends the tokens 1..n, shuffled, from `workers` goroutines at once, all on one lock,
// and returns the first sign that the store did not compare and record atomically: a call accepted
// or refused against an older newest than one already accepted before it began, an answer that
// contradicts itself, or a final newest below the largest token.
func Concurrent(ctx context.Context, store fencing.Store, lock string, n, workers int) error {
	tokens := rand.Perm(n)
	calls := make([]call, n)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int, n)
	for i := range tokens {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := &calls[i]
				c.token = uint64(tokens[i] + 1)
				c.start = time.Now()
				d, err := store.Check(ctx, lock, c.token)
				c.end, c.decision = time.Now(), d
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for _, b := range calls {
		if b.decision.Accepted != (b.decision.Newest == b.token) || !b.decision.Accepted && b.decision.Newest < b.token {
			return fmt.Errorf("token %d: the answer %+v contradicts itself", b.token, b.decision)
		}
		for _, a := range calls {
			if a.decision.Accepted && a.end.Before(b.start) && b.decision.Newest < a.token {
				return fmt.Errorf("token %d was answered with newest %d after %d had been accepted", b.token, b.decision.Newest, a.token)
			}
		}
	}
	final, err := store.Check(ctx, lock, 0)
	if err != nil {
		return err
	}
	if final.Newest != uint64(n) {
		return fmt.Errorf("the newest recorded is %d, not %d, the largest token sent", final.Newest, n)
	}
	return nil
}
