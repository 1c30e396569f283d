package fencing_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
)

// httpCall sends a GET through a real listener with the given headers and returns the status,
// the JSON body and whether the handler behind the guard ran.
func httpCall(t *testing.T, url string, reached *int32, header http.Header) (int, map[string]string, bool) {
	t.Helper()
	before := atomic.LoadInt32(reached)
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := map[string]string{}
	if resp.StatusCode != http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("status %d with a body that is not JSON: %v", resp.StatusCode, err)
		}
	}
	return resp.StatusCode, body, atomic.LoadInt32(reached) != before
}

func fenced(lock string, token uint64) http.Header {
	h := http.Header{}
	fencing.SetHeader(h, lock, token)
	return h
}

func TestHTTPGuard(t *testing.T) {
	var reached int32
	guard := fencing.Guard{Store: &fencing.MemoryStore{}}
	server := httptest.NewServer(guard.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := fencing.FromContext(r.Context()); !ok || f.Token == 0 {
			t.Errorf("the handler sees no fence: %+v", f)
		}
		atomic.AddInt32(&reached, 1)
	})))
	defer server.Close()
	lock := fencetest.RandomLock(t)

	for _, token := range []uint64{7, 8, 8} {
		if code, body, ran := httpCall(t, server.URL, &reached, fenced(lock, token)); code != http.StatusOK || !ran {
			t.Fatalf("token %d (newest or equal): status %d %v, handler ran: %v", token, code, body, ran)
		}
	}
	code, body, ran := httpCall(t, server.URL, &reached, fenced(lock, 7))
	if code != http.StatusConflict || ran || body["error"] != "stale_fencing_token" || body["lock"] != lock || body["token"] != "7" || body["newest"] != "8" {
		t.Fatalf("stale token: status %d %v, handler ran: %v", code, body, ran)
	}
	code, body, ran = httpCall(t, server.URL, &reached, http.Header{fencing.HeaderLock: {"x"}})
	if code != http.StatusBadRequest || ran || body["error"] != "missing_fence" || body["header"] != fencing.HeaderToken {
		t.Fatalf("no token: status %d %v, handler ran: %v", code, body, ran)
	}
	code, body, ran = httpCall(t, server.URL, &reached, http.Header{fencing.HeaderLock: {"a%zz"}, fencing.HeaderToken: {"9"}})
	if code != http.StatusBadRequest || ran || body["error"] != "malformed_fence" || body["field"] != "lock" || body["header"] != fencing.HeaderLock {
		t.Fatalf("bad lock: status %d %v, handler ran: %v", code, body, ran)
	}
	// The refusals recorded nothing: 8 is still accepted.
	if code, body, _ := httpCall(t, server.URL, &reached, fenced(lock, 8)); code != http.StatusOK {
		t.Fatalf("token 8 after the refusals: %d %v", code, body)
	}
}

func callCtx(t *testing.T, lock string, token uint64) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return fencing.OutgoingContext(ctx, lock, token)
}

func wantCode(t *testing.T, what string, err error, code codes.Code, words ...string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: %v, want %v", what, err, code)
	}
	for _, w := range words {
		if !strings.Contains(status.Convert(err).Message(), w) {
			t.Fatalf("%s: message %q does not say %q", what, status.Convert(err).Message(), w)
		}
	}
}

func TestGRPCGuardUnary(t *testing.T) {
	client, lock := fencetest.Serve(t, fencing.Guard{Store: &fencing.MemoryStore{}}).GRPC, fencetest.RandomLock(t)
	for _, token := range []uint64{41, 42, 42} {
		if _, err := client.Check(callCtx(t, lock, token), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("token %d (newest or equal): %v", token, err)
		}
	}
	_, err := client.Check(callCtx(t, lock, 41), &healthpb.HealthCheckRequest{})
	wantCode(t, "stale token", err, codes.FailedPrecondition, lock, "41 is older than 42")
	_, err = client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	wantCode(t, "no fence", err, codes.InvalidArgument, fencing.MetadataToken)
}

func TestGRPCGuardLetsUnguardedMethodsThrough(t *testing.T) {
	guard := fencing.Guard{Store: &fencing.MemoryStore{}, Unguarded: func(method string) bool { return method == "/grpc.health.v1.Health/Check" }}
	client := fencetest.Serve(t, guard).GRPC
	if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("an unguarded method without a fence: %v", err)
	}
	stream, err := client.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	wantCode(t, "a guarded method without a fence", err, codes.InvalidArgument, fencing.MetadataToken)
}

func TestGRPCGuardStream(t *testing.T) {
	client, lock := fencetest.Serve(t, fencing.Guard{Store: &fencing.MemoryStore{}}).GRPC, fencetest.RandomLock(t)
	watch := func(token uint64) error {
		stream, err := client.Watch(callCtx(t, lock, token), &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	}
	if err := watch(9); err != nil {
		t.Fatalf("newest token: %v", err)
	}
	if err := watch(10); err != nil {
		t.Fatalf("newer token: %v", err)
	}
	wantCode(t, "stale token", watch(9), codes.FailedPrecondition, lock, "9 is older than 10")
}
