package fencing_test

import (
	"context"
	"net/http"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/holdfast/holdfast/clients/go/fencing"
	"github.com/holdfast/holdfast/clients/go/fencing/internal/fencetest"
)

// The cases every client runs: clients/conformance/fencing.json.

func TestConformanceWireNames(t *testing.T) {
	w := fencetest.Load(t).Wire
	if w.HTTPHeaders.Lock != fencing.HeaderLock || w.HTTPHeaders.Token != fencing.HeaderToken ||
		w.GrpcMetadata.Lock != fencing.MetadataLock || w.GrpcMetadata.Token != fencing.MetadataToken {
		t.Fatalf("wire names differ from fencing.json: %+v", w)
	}
}

func TestConformanceAttach(t *testing.T) {
	for _, tc := range fencetest.Load(t).Attach {
		token := fencetest.Uint64(t, tc.Token)
		h := http.Header{}
		fencing.SetHeader(h, tc.Lock, token)
		if h.Get(fencing.HeaderLock) != tc.Headers.Lock || h.Get(fencing.HeaderToken) != tc.Headers.Token {
			t.Errorf("%s: headers %v, want %+v", tc.Name, h, tc.Headers)
		}
		md, _ := metadata.FromOutgoingContext(fencing.OutgoingContext(context.Background(), tc.Lock, token))
		if got := md.Get(fencing.MetadataLock); len(got) != 1 || got[0] != tc.Headers.Lock {
			t.Errorf("%s: metadata lock %v, want %q", tc.Name, got, tc.Headers.Lock)
		}
		if got := md.Get(fencing.MetadataToken); len(got) != 1 || got[0] != tc.Headers.Token {
			t.Errorf("%s: metadata token %v, want %q", tc.Name, got, tc.Headers.Token)
		}
	}
}

func TestConformanceParse(t *testing.T) {
	for _, tc := range fencetest.Load(t).Parse {
		h, md := http.Header{}, metadata.MD{}
		if v, ok := tc.Headers["lock"]; ok {
			h[fencing.HeaderLock], md[fencing.MetadataLock] = []string{v}, []string{v}
		}
		if v, ok := tc.Headers["token"]; ok {
			h[fencing.HeaderToken], md[fencing.MetadataToken] = []string{v}, []string{v}
		}
		fromHeader, headerErr := fencing.FromHeader(h)
		fromMetadata, metadataErr := fencing.FromMetadata(md)
		for via, got := range map[string]struct {
			f   fencing.Fence
			err error
		}{"headers": {fromHeader, headerErr}, "metadata": {fromMetadata, metadataErr}} {
			if tc.Expect != nil {
				if got.err != nil || got.f.Lock != tc.Expect.Lock || got.f.Token != fencetest.Uint64(t, tc.Expect.Token) {
					t.Errorf("%s via %s: got %+v, %v; want %+v", tc.Name, via, got.f, got.err, *tc.Expect)
				}
				continue
			}
			bad, ok := got.err.(*fencing.BadFenceError)
			if !ok || bad.Kind != tc.Error || bad.Field != tc.Field {
				t.Errorf("%s via %s: got %+v, %v; want %s %s", tc.Name, via, got.f, got.err, tc.Error, tc.Field)
			}
		}
	}
}
