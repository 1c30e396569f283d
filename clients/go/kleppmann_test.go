package holdfast

// Kleppmann's scenario against a real holdfast server: a holder checks its lease, is paused
// (SIGSTOP) past it, the next holder writes, and then the first one's delayed write arrives. The
// guard refuses it; without the guard (the negative control) it overwrites the newer write.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast/holdfast/clients/go/fencing"
	holdfastv1 "github.com/holdfast/holdfast/clients/go/gen/holdfast/v1"
)

const kleppmannChildEnv = "HOLDFAST_KLEPPMANN_CHILD"

// register is the protected resource: one value, written by PUT, read by GET.
type register struct {
	mu     sync.Mutex
	value  string
	writes map[string]int // writer -> accepted writes
}

func (r *register) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method == http.MethodPut {
		body, _ := io.ReadAll(req.Body)
		r.value = string(body)
		r.writes[strings.SplitN(r.value, ":", 2)[0]]++
	}
	fmt.Fprint(w, r.value)
}

// read is the value and each writer's accepted writes.
func (r *register) read() (string, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.writes
}

// put writes value to url with the lease's fence and returns the status.
func put(url string, lease *Lease, value string) (int, error) {
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(value))
	if err != nil {
		return 0, err
	}
	lease.FenceHeader(req.Header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestMain runs the first holder of the scenario when the test binary is started as its child.
func TestMain(m *testing.M) {
	if os.Getenv(kleppmannChildEnv) != "" {
		if err := kleppmannHolder(); err != nil {
			fmt.Fprintln(os.Stderr, "kleppmann holder:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kleppmannHolder is the first holder, a child process: it holds the lock, writes, checks its
// lease once more, says "checked", and writes again when told "write" (after its pause).
func kleppmannHolder() error {
	addr, name, url := os.Getenv("HOLDFAST_ADDR"), os.Getenv("KLEPPMANN_LOCK"), os.Getenv("KLEPPMANN_URL")
	conn, err := Dial(context.Background(), addr, Security{})
	if err != nil {
		return err
	}
	lease, err := Hold(context.Background(), holdfastv1.NewLockServiceClient(conn), name, Options{TTL: 3 * time.Second, Wait: 5 * time.Second})
	if err != nil {
		return err
	}
	if code, err := put(url, lease, "first:1"); err != nil || code != http.StatusOK {
		return fmt.Errorf("first write: %d %v", code, err)
	}
	if err := lease.Err(); err != nil {
		return err
	}
	fmt.Println("checked") // the lease was valid: the write below is the one a pause delays
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	if strings.TrimSpace(line) != "write" {
		return fmt.Errorf("told %q", line)
	}
	code, err := put(url, lease, "first:2")
	if err != nil {
		return err
	}
	fmt.Printf("status %d\n", code)
	return nil
}

// kleppmann runs the scenario with the resource behind handler wrapping reg; it returns the
// status of the first holder's delayed write.
func kleppmann(t *testing.T, reg *register, handler http.Handler) int {
	// Its own server, pinging each connection every second: the paused holder's stream is then
	// dropped within ~2 s and its lock freed when its 3 s lease has run out (defaults: 15 s more).
	p := startProcesses(t, "--keepalive-time-ms", "1000", "--keepalive-timeout-ms", "1000")
	addr := p.addr
	conn := dial(t, addr)
	defer conn.Close()
	client := holdfastv1.NewLockServiceClient(conn)
	resource := httptest.NewServer(handler)
	defer resource.Close()
	name := randomName(t)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), kleppmannChildEnv+"=1", "HOLDFAST_ADDR="+addr, "KLEPPMANN_LOCK="+name, "KLEPPMANN_URL="+resource.URL)
	child.Stderr = os.Stderr
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Signal(syscall.SIGCONT); _ = child.Process.Kill(); _ = child.Wait() }()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "checked" {
		t.Fatalf("the first holder said %q", lines.Text())
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The paused holder renews nothing: the server grants the lock to the next holder once the
	// first lease has run out.
	pausedAt := time.Now()
	second, err := Hold(context.Background(), client, name, Options{TTL: 10 * time.Second, Wait: 20 * time.Second})
	t.Logf("the next holder got the lock %v after the pause", time.Since(pausedAt).Round(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	for i := 1; i <= 3; i++ {
		if code, err := put(resource.URL, second, fmt.Sprintf("second:%d", i)); err != nil || code != http.StatusOK {
			t.Fatalf("the current holder's write %d: %d %v (a false refusal)", i, code, err)
		}
	}
	if err := child.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, "write")
	if !lines.Scan() {
		t.Fatalf("the first holder said nothing after its pause: %v", child.Wait())
	}
	var code int
	if _, err := fmt.Sscanf(lines.Text(), "status %d", &code); err != nil {
		t.Fatalf("the first holder said %q", lines.Text())
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("the first holder: %v", err)
	}
	return code
}

func TestKleppmannScenarioGuardRefusesThePausedHolder(t *testing.T) {
	reg := &register{writes: map[string]int{}}
	code := kleppmann(t, reg, fencing.Guard{Store: &fencing.MemoryStore{}}.HTTP(reg))
	if code != http.StatusConflict {
		t.Fatalf("the paused holder's late write got %d, want 409", code)
	}
	if value, writes := reg.read(); value != "second:3" || writes["first"] != 1 || writes["second"] != 3 {
		t.Fatalf("the register holds %q after writes %v: an update was lost or refused", value, writes)
	}
}

// Negative control: without the guard the paused holder's write lands over the newer one.
func TestKleppmannScenarioWithoutGuardLosesAnUpdate(t *testing.T) {
	reg := &register{writes: map[string]int{}}
	if code := kleppmann(t, reg, reg); code != http.StatusOK {
		t.Fatalf("the unguarded resource answered %d", code)
	}
	if value, _ := reg.read(); value != "first:2" {
		t.Fatalf("the register holds %q: the stale write did not land, so this scenario cannot show the guard's work", value)
	}
}
