// Command fenced shows a resource guarded by the fencing kit: it serves a small key-value store
// over HTTP behind fencing.Guard, then takes a holdfast lock twice in turn and writes under each
// lease; the first lease's write, replayed after the second one's, is refused (409).
//
//	go -C clients/go/examples run ./fenced --addr 127.0.0.1:50051 orders
//	go -C clients/go/examples run ./fenced --addr 127.0.0.1:50051 --redis 127.0.0.1:6380 orders
//
//	go -C clients/go/examples run ./fenced --addr 127.0.0.1:50051 --keys http://127.0.0.1:9090/fence-keys orders
//
// --redis keeps the newest tokens in that Redis (fenceredis: it must run with appendonly yes and
// appendfsync always); without it they are kept in memory. --keys (a server started with
// --fence-signing-key, and the URL of its GET /fence-keys) makes the guard require fences signed
// for LOCK, and shows a forged token refused (403) too. It exits 1 if a stale or forged write passed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	holdfast "github.com/holdfast/holdfast/clients/go"
	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/fenceredis"
	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// kv is the protected resource: PUT /key stores the body, GET /key reads it.
type kv struct {
	mu     sync.Mutex
	values map[string]string
}

func (s *kv) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodPut {
		body, _ := io.ReadAll(r.Body)
		s.values[r.URL.Path] = string(body)
	}
	fmt.Fprint(w, s.values[r.URL.Path])
}

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "holdfast server host:port")
	redisAddr := flag.String("redis", "", "keep the newest tokens in this Redis (host:port) instead of in memory")
	keysURL := flag.String("keys", "", "require fences signed by the keys at this URL (the server's /fence-keys)")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: fenced [--addr host:port] [--redis host:port] [--keys URL] LOCK")
	}
	name := flag.Arg(0)
	log.SetFlags(0)
	ctx := context.Background()

	store, err := newStore(ctx, *redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	guard := fencing.Guard{Store: store, OnStoreError: func(err error) { log.Print(err) }}
	if *keysURL != "" {
		if guard.Keys, err = fencing.FetchKeys(ctx, *keysURL); err != nil {
			log.Fatal(err)
		}
		guard.Lock = name // the lock that protects this resource
	}
	resource := serve(guard.HTTP(&kv{values: map[string]string{}}))

	conn, err := holdfast.Dial(ctx, *addr, holdfast.Security{APIKey: os.Getenv("HOLDFAST_API_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := holdfastv1.NewLockServiceClient(conn)
	opts := holdfast.Options{TTL: 10 * time.Second, Wait: 10 * time.Second}

	first, err := holdfast.Hold(ctx, client, name, opts)
	if err != nil {
		log.Fatal(err)
	}
	write(resource, first, "written by the first holder")
	if err := first.Release(); err != nil {
		log.Fatal(err)
	}
	second, err := holdfast.Hold(ctx, client, name, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer second.Release()
	write(resource, second, "written by the second holder")
	// As if the first holder had been paused before its write and woke up now.
	if status := write(resource, first, "a late write by the first holder"); status != http.StatusConflict {
		log.Fatalf("the stale write was answered %d, not refused", status)
	}
	if guard.Keys != nil { // a forger without the signing key sends the largest token
		req, _ := http.NewRequest(http.MethodPut, resource+"/report", strings.NewReader("forged"))
		fencing.SetHeader(req.Header, name, 18446744073709551615)
		if status := send(req, "a forged token"); status != http.StatusForbidden {
			log.Fatalf("the forged write was answered %d, not refused", status)
		}
	}
}

func newStore(ctx context.Context, redisAddr string) (fencing.Store, error) {
	if redisAddr == "" {
		return &fencing.MemoryStore{}, nil
	}
	pool := &redis.Pool{MaxIdle: 4, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", redisAddr) }}
	return fenceredis.New(ctx, pool, fenceredis.Options{})
}

// serve runs handler on a free loopback port and returns its URL.
func serve(handler http.Handler) string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(http.Serve(listener, handler)) }()
	return "http://" + listener.Addr().String()
}

// write PUTs value with the lease's fence and prints what the resource answered.
func write(resource string, lease *holdfast.Lease, value string) int {
	req, err := http.NewRequest(http.MethodPut, resource+"/report", strings.NewReader(value))
	if err != nil {
		log.Fatal(err)
	}
	lease.FenceHeader(req.Header) // Holdfast-Fence (when the server signs) and the unsigned pair
	return send(req, fmt.Sprintf("fencing token %d: %q", lease.FencingToken(), value))
}

// send makes the request and prints what the resource answered.
func send(req *http.Request, what string) int {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%s -> %d %s\n", what, resp.StatusCode, strings.TrimSpace(string(body)))
	return resp.StatusCode
}
