package holdfast

// Real processes for the tests: a redis-server and a holdfast server on free loopback ports.
// HOLDFAST_ADDR and HOLDFAST_REDIS_URL point the tests at a running server instead; a test that
// must freeze its server always starts its own.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

const startTimeout = 20 * time.Second

type processes struct {
	redis, server *exec.Cmd
	addr          string
	redisAddr     string
}

func randomName(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "go-" + hex.EncodeToString(b)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// redisCommand sends one command over RESP and returns the reply line, or a bulk string's value.
func redisCommand(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	reply := bufio.NewReader(conn)
	line, err := reply.ReadString('\n')
	if err == nil && strings.HasPrefix(line, "$") && !strings.HasPrefix(line, "$-1") {
		line, err = reply.ReadString('\n')
	}
	return strings.TrimSpace(line), err
}

// lockKeys are the Redis keys of one lock as src/engine/keys.ts builds them (names without % { }).
func lockKeys(name string) []string {
	return []string{"hf:{" + name + "}:h", "hf:{" + name + "}:q", "hf:{" + name + "}:d"}
}

// startProcesses starts a redis-server and a holdfast server with serverArgs added to serve.
func startProcesses(t testing.TB, serverArgs ...string) *processes {
	return startProcessesDialing(t, []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, serverArgs...)
}

// startProcessesDialing is startProcesses for a server that readyOpts reach (TLS: a plaintext dial never would).
func startProcessesDialing(t testing.TB, readyOpts []grpc.DialOption, serverArgs ...string) *processes {
	p := &processes{}
	t.Cleanup(p.stop)
	p.redisAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(p.redisAddr)
	p.redis = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := p.redis.Start(); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) { // redis-server announces nothing to wait on
		reply, err := redisCommand(p.redisAddr, "PING")
		if reply == "+PONG" {
			break
		}
		if time.Since(start) > startTimeout {
			t.Fatalf("redis-server did not answer PING: %v", err)
		}
	}
	root := testrepo.Root(t)
	cli := filepath.Join(root, "dist", "src", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("%s is missing: build the server first (npx tsc -p .)", cli)
	}
	// A Redis new to holdfast: the server grants at once instead of waiting out the quarantine.
	if out, err := exec.Command("node", cli, "skip-first-quarantine", "--redis", "redis://"+p.redisAddr).CombinedOutput(); err != nil {
		t.Fatalf("skip-first-quarantine: %v: %s", err, out)
	}
	p.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := append([]string{cli, "serve", "--listen", p.addr, "--redis", "redis://" + p.redisAddr, "--log-level", "warn"}, serverArgs...)
	p.server = exec.Command("node", args...)
	p.server.Dir, p.server.Stdout, p.server.Stderr = root, os.Stderr, os.Stderr
	if err := p.server.Start(); err != nil {
		t.Fatal(err)
	}
	waitServing(t, p.addr, readyOpts...)
	return p
}

// waitServing waits until the server at addr says SERVING on the gRPC health service: it binds
// its port before its backend is up, and answers lock calls UNAVAILABLE until then.
func waitServing(t testing.TB, addr string, opts ...grpc.DialOption) {
	conn := dial(t, addr, opts...)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health of %s: %v", addr, err)
	}
	for {
		reply, err := watch.Recv()
		if err != nil {
			t.Fatalf("%s did not say SERVING: %v", addr, err)
		}
		if reply.Status == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
}

func (p *processes) pause(t testing.TB) {
	if err := p.server.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

func (p *processes) resume() {
	if p.server != nil && p.server.Process != nil {
		_ = p.server.Process.Signal(syscall.SIGCONT)
	}
}

func (p *processes) stop() {
	p.resume()
	for _, cmd := range []*exec.Cmd{p.server, p.redis} {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

// dial connects (plaintext unless opts say otherwise) and waits until the server answers (or fails the test).
func dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.DialContext(ctx, addr, append(opts, grpc.WithBlock())...)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return conn
}

// sharedServer is the server named by HOLDFAST_ADDR/HOLDFAST_REDIS_URL, or a new one for this test.
func sharedServer(t testing.TB) (holdfastv1.LockServiceClient, string) {
	client, redisAddr, _ := sharedServerAt(t)
	return client, redisAddr
}

// sharedServerAddr is sharedServer's client with the server's address.
func sharedServerAddr(t testing.TB) (holdfastv1.LockServiceClient, string) {
	client, _, addr := sharedServerAt(t)
	return client, addr
}

func sharedServerAt(t testing.TB) (holdfastv1.LockServiceClient, string, string) {
	addr, redisURL := os.Getenv("HOLDFAST_ADDR"), os.Getenv("HOLDFAST_REDIS_URL")
	redisAddr := strings.TrimSuffix(strings.TrimPrefix(redisURL, "redis://"), "/")
	if addr == "" || redisAddr == "" {
		p := startProcesses(t)
		addr, redisAddr = p.addr, p.redisAddr
	}
	conn := dial(t, addr)
	t.Cleanup(func() { conn.Close() })
	return holdfastv1.NewLockServiceClient(conn), redisAddr, addr
}
