package holdfast

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

// makeCerts makes the test certificates with test/support/make-certs.sh (see there) and returns a reader of them.
func makeCerts(t *testing.T) func(name string) []byte {
	dir := t.TempDir()
	if out, err := exec.Command("bash", filepath.Join(testrepo.Root(t), "test", "support", "make-certs.sh"), dir).CombinedOutput(); err != nil {
		t.Fatalf("make-certs.sh: %v: %s", err, out)
	}
	return func(name string) []byte {
		pem, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return pem
	}
}

func dialOptions(t *testing.T, s Security) []grpc.DialOption {
	opts, err := DialOptions(s)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// startMutualTLS starts a server that wants TLS and a client certificate signed by ca.crt; good
// reaches it.
func startMutualTLS(t *testing.T) (p *processes, pem func(string) []byte, good Security) {
	pem = makeCerts(t)
	dir := t.TempDir()
	for _, name := range []string{"server.crt", "server.key", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(dir, name), pem(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good = Security{CA: pem("ca.crt"), Cert: pem("client.crt"), Key: pem("client.key")}
	p = startProcessesDialing(t, dialOptions(t, good),
		"--tls-cert", filepath.Join(dir, "server.crt"), "--tls-key", filepath.Join(dir, "server.key"), "--tls-client-ca", filepath.Join(dir, "ca.crt"))
	return p, pem, good
}

func TestMutualTLS(t *testing.T) {
	p, pem, good := startMutualTLS(t)

	t.Run("holds a lock with the client certificate", func(t *testing.T) {
		conn := dial(t, p.addr, dialOptions(t, good)...)
		defer conn.Close()
		lease, err := Hold(context.Background(), holdfastv1.NewLockServiceClient(conn), randomName(t), Options{TTL: 3 * time.Second, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if lease.FencingToken() == 0 {
			t.Fatal("no fencing token")
		}
		if err := lease.Release(); err != nil {
			t.Fatal(err)
		}
	})

	refused := map[string]Security{
		"no client certificate":          {CA: pem("ca.crt")},
		"a certificate from another CA":  {CA: pem("ca.crt"), Cert: pem("other-client.crt"), Key: pem("other-client.key")},
		"a server CA that is not the CA": {CA: pem("other-ca.crt"), Cert: pem("client.crt"), Key: pem("client.key")},
	}
	for what, s := range refused {
		t.Run("refused with "+what, func(t *testing.T) {
			conn, err := grpc.Dial(p.addr, dialOptions(t, s)...)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err = holdfastv1.NewLockServiceClient(conn).Inspect(ctx, &holdfastv1.InspectRequest{Name: "x"})
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("got %v, want UNAVAILABLE", err)
			}
		})
	}

	if _, err := DialOptions(Security{CA: pem("ca.crt"), Cert: pem("client.crt")}); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
}

// TestAPIKeySentOnEveryCall checks what reaches a gRPC server that notes each call's metadata.
func TestAPIKeySentOnEveryCall(t *testing.T) {
	var mu sync.Mutex
	var seen [][2]string
	server := grpc.NewServer(grpc.UnknownServiceHandler(func(_ interface{}, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		md, _ := metadata.FromIncomingContext(stream.Context())
		mu.Lock()
		seen = append(seen, [2]string{filepath.Base(method), firstOr(md.Get("authorization"), "")})
		mu.Unlock()
		return status.Error(codes.PermissionDenied, "recorded")
	}))
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = server.Serve(listener) }()
	defer server.Stop()

	for _, key := range []string{"go-key", ""} {
		conn := dial(t, listener.Addr().String(), dialOptions(t, Security{APIKey: key})...)
		client := holdfastv1.NewLockServiceClient(conn)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := client.Inspect(ctx, &holdfastv1.InspectRequest{Name: "x"}); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("Inspect: %v", err)
		}
		if _, err := Hold(ctx, client, "x", Options{}); err == nil {
			t.Fatal("Hold succeeded against the recorder")
		}
		cancel()
		conn.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	want := [][2]string{{"Inspect", "Bearer go-key"}, {"Hold", "Bearer go-key"}, {"Inspect", ""}, {"Hold", ""}}
	if len(seen) != len(want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("seen %v, want %v", seen, want)
		}
	}
}

func firstOr(values []string, otherwise string) string {
	if len(values) == 0 {
		return otherwise
	}
	return values[0]
}
