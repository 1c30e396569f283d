package holdfast

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

// dialRefused dials and wants a *DialError naming addr and saying every one of words, in words
// of its own rather than grpc-go's.
func dialRefused(t *testing.T, addr string, s Security, words ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := Dial(ctx, addr, s)
	if err == nil {
		conn.Close()
		t.Fatalf("Dial(%q) connected", addr)
	}
	dialErr, ok := err.(*DialError)
	if !ok {
		t.Fatalf("Dial(%q): %T %v, want a *DialError", addr, err, err)
	}
	message := err.Error()
	for _, w := range append([]string{addr}, words...) {
		if !strings.Contains(message, w) {
			t.Errorf("Dial(%q): %q does not say %q", addr, message, w)
		}
	}
	if strings.Contains(message, "desc =") || strings.Contains(message, "transport:") {
		t.Errorf("Dial(%q): %q passes grpc-go's own text on", addr, message)
	}
	t.Logf("%s", dialErr)
}

func dialWorks(t *testing.T, addr string, s Security) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := Dial(ctx, addr, s)
	if err != nil {
		t.Fatalf("Dial(%q): %v", addr, err)
	}
	defer conn.Close()
	if _, err := holdfastv1.NewLockServiceClient(conn).Inspect(ctx, &holdfastv1.InspectRequest{Name: "dial-works"}); err != nil {
		t.Fatal(err)
	}
}

func TestDialRefusesAddressesOfTheWrongShape(t *testing.T) {
	dialRefused(t, "localhost", Security{}, "no port", "localhost:50051")
	dialRefused(t, "http://127.0.0.1:50051", Security{}, "scheme (http://)", "give host:port only, e.g. 127.0.0.1:50051")
	dialRefused(t, "https://locks.internal:443", Security{}, "scheme (https://)", "Security.TLS")
	dialRefused(t, "127.0.0.1:99999", Security{}, "port \"99999\"")
}

func TestDialSaysWhatIsWrongWithAPlaintextServer(t *testing.T) {
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startProcesses(t, "--http-listen", httpAddr)
	dialWorks(t, p.addr, Security{})
	dialRefused(t, httpAddr, Security{}, "HTTP/1", "--http-listen")
	dialRefused(t, fmt.Sprintf("127.0.0.1:%d", freePort(t)), Security{}, "connection refused")
	dialRefused(t, p.addr, Security{TLS: true}, "does not speak TLS")
}

func TestDialSaysWhatIsWrongWithATLSServer(t *testing.T) {
	p, pem, good := startMutualTLS(t)
	dialWorks(t, p.addr, good)
	dialRefused(t, p.addr, Security{}, "speaks TLS", "Security.TLS")
	dialRefused(t, p.addr, Security{CA: pem("other-ca.crt"), Cert: pem("client.crt"), Key: pem("client.key")}, "not signed by a CA this client trusts")
	dialRefused(t, p.addr, Security{CA: pem("ca.crt")}, "refused this client's certificate")
}
