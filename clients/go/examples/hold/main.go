// Command hold takes a lock, prints its fencing token and releases it.
//
//	go -C clients/go/examples run ./hold --addr 127.0.0.1:50051 reports
//	HOLDFAST_API_KEY=… go -C clients/go/examples run ./hold --addr locks.internal:50051 \
//	  --tls-ca ca.crt --tls-cert client.crt --tls-key client.key reports
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	holdfast "github.com/holdfast/holdfast/clients/go"
	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "holdfast server host:port")
	ttl := flag.Duration("ttl", 10*time.Second, "lease length")
	wait := flag.Duration("wait", 5*time.Second, "how long to wait for the lock")
	tlsCA := flag.String("tls-ca", "", "PEM CA that signed the server's certificate (turns TLS on)")
	tlsCert := flag.String("tls-cert", "", "mutual TLS: PEM client certificate")
	tlsKey := flag.String("tls-key", "", "mutual TLS: the client certificate's PEM key")
	apiKey := flag.String("api-key", os.Getenv("HOLDFAST_API_KEY"), "API key (default $HOLDFAST_API_KEY)")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: hold [--addr host:port] NAME")
	}
	name := flag.Arg(0)
	log.SetFlags(0)

	security := holdfast.Security{CA: readPEM(*tlsCA), Cert: readPEM(*tlsCert), Key: readPEM(*tlsKey), APIKey: *apiKey}
	conn, err := holdfast.Dial(context.Background(), *addr, security) // says what is wrong when it cannot connect
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	lease, err := holdfast.Hold(context.Background(), holdfastv1.NewLockServiceClient(conn), name,
		holdfast.Options{TTL: *ttl, Wait: *wait})
	if errors.Is(err, holdfast.ErrNotAcquired) {
		log.Fatalf("hold: %v", err)
	} else if err != nil {
		log.Fatalf("hold: %s: %v", name, err)
	}
	fmt.Printf("holding %s with fencing token %d\n", name, lease.FencingToken())
	select {
	case <-lease.Done(): // lost before the work could start
		log.Fatalf("hold: %v", lease.Err())
	default:
	}
	if err := lease.Release(); err != nil {
		log.Fatalf("hold: release: %v", err)
	}
	fmt.Printf("released %s\n", name)
}

// readPEM reads the file a flag names; nil when the flag is unset.
func readPEM(file string) []byte {
	if file == "" {
		return nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		log.Fatal(err)
	}
	return pem
}
