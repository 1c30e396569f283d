package holdfast

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/holdfast/holdfast/clients/go/fencing"
)

// Two successive grants of one lock from a real server: the guard takes the second holder's
// fence and then refuses the first one's, which FenceHeader attached for it.
func TestLeaseFenceHeaderAndContext(t *testing.T) {
	client, _ := sharedServer(t)
	name := randomName(t)
	guard := fencing.Guard{Store: &fencing.MemoryStore{}}
	server := httptest.NewServer(guard.HTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer server.Close()
	send := func(lease *Lease) int {
		req, _ := http.NewRequest(http.MethodPost, server.URL, nil)
		lease.FenceHeader(req.Header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	opts := Options{TTL: 3 * time.Second, Wait: 5 * time.Second}
	first, err := Hold(context.Background(), client, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if code := send(first); code != http.StatusOK {
		t.Fatalf("first holder: %d", code)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second, err := Hold(context.Background(), client, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	if second.FencingToken() <= first.FencingToken() {
		t.Fatalf("fencing tokens %d then %d", first.FencingToken(), second.FencingToken())
	}
	if code := send(second); code != http.StatusOK {
		t.Fatalf("second holder: %d", code)
	}
	if code := send(first); code != http.StatusConflict {
		t.Fatalf("first holder after the second: %d, want 409", code)
	}
	f, err := fencing.FromMetadata(metadataOf(second.FenceContext(context.Background())))
	if err != nil || f.Lock != name || f.Token != second.FencingToken() {
		t.Fatalf("FenceContext carries %+v, %v", f, err)
	}
}

func metadataOf(ctx context.Context) metadata.MD {
	md, _ := metadata.FromOutgoingContext(ctx)
	return md
}
