// Command session holds several locks under one session, waits for the session's heartbeat to
// renew them all, and closes the session, which frees them all at once.
//
//	go -C clients/go/examples run ./session --addr 127.0.0.1:50051 --locks 5 shards
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	holdfast "github.com/holdfast/holdfast/clients/go"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "holdfast server host:port")
	locks := flag.Int("locks", 5, "how many locks to hold, named PREFIX/0 ... PREFIX/(locks-1)")
	ttl := flag.Duration("ttl", 3*time.Second, "lease length (the server renews at about a third of it)")
	flag.Parse()
	if flag.NArg() != 1 || *locks < 1 {
		log.Fatal("usage: session [--addr host:port] [--locks N] PREFIX")
	}
	prefix := flag.Arg(0)
	log.SetFlags(0)
	ctx := context.Background()

	conn, err := holdfast.Dial(ctx, *addr, holdfast.Security{})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	session, err := holdfast.OpenSession(ctx, conn, holdfast.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	var leases []*holdfast.Lease
	for i := 0; i < *locks; i++ {
		lease, err := session.Hold(ctx, fmt.Sprintf("%s/%d", prefix, i), holdfast.Options{TTL: *ttl, Wait: 5 * time.Second})
		if err != nil {
			log.Fatalf("session: %v", err)
		}
		fmt.Printf("holding %s with fencing token %d\n", lease.Name(), lease.FencingToken())
		leases = append(leases, lease)
	}

	// One renewed message renews every lock of the session: each lease's deadline moves forward.
	first := leases[0].Deadline()
	for leases[0].Deadline().Equal(first) {
		select {
		case <-leases[0].Done():
			log.Fatalf("session: %v", leases[0].Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	fmt.Printf("renewed: %d locks, %d renewed messages\n", session.Stats().Holds, session.Stats().Renewed)

	if err := session.Close(); err != nil { // frees every lock at once
		log.Fatalf("session: close: %v", err)
	}
	for _, lease := range leases {
		<-lease.Done()
		fmt.Printf("released %s (%v)\n", lease.Name(), lease.Err())
	}
}
