package cursor

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

func TestPageRoundTrip(t *testing.T) {
	for _, p := range []object.Position{
		{},
		{Cluster: "c1", Namespace: "web", Name: "web-1", Kind: "Pod", Resource: "pods"},
		{Cluster: "c1", Name: "kube-system", Kind: "Namespace", Resource: "namespaces"},
		{Cluster: "ü/é", Namespace: strings.Repeat("n", 300), Name: "a\x00b", Kind: "Deployment.apps", Resource: "deployments.apps"},
	} {
		c := EncodePage(p)
		got, err := DecodePage(c)
		if err != nil {
			t.Fatalf("decode %s: %v", c, err)
		}
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if strings.ContainsAny(c, "+/=") {
			t.Errorf("cursor %q is not unpadded base64url", c)
		}
	}
}

func TestRevisionRoundTrip(t *testing.T) {
	clocks := []index.Clock{
		{Stream: index.Stream{Cluster: "eu-1", Resource: "pods"}, RV: 1234567},
		{Stream: index.Stream{Cluster: "eu-1", Resource: "replicasets.apps"}, RV: 99},
		{Stream: index.Stream{Cluster: "eu-10", Resource: "pods"}},
		{Stream: index.Stream{Cluster: "us", Resource: "pods"}, RV: 1<<64 - 1},
	}
	for _, want := range []Revision{{}, {Epoch: "0123456789abcdef", Revision: 42}, {Epoch: "e", Revision: 1<<64 - 1}, {Epoch: "e", Revision: 7, Clocks: clocks}} {
		got, err := DecodeRevision(EncodeRevision(want))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	c, _ := DecodeRevision(EncodeRevision(Revision{Epoch: "old", Revision: 3}))
	if err := c.Check("old"); err != nil {
		t.Errorf("check of the same epoch: %v", err)
	}
	if err := c.Check("new"); !errors.Is(err, ErrExpired) {
		t.Errorf("check of another epoch = %v, want ErrExpired", err)
	}
}

func TestSortedRoundTrip(t *testing.T) {
	pos := object.Position{Cluster: "c1", Namespace: "web", Name: "web-1", Kind: "Pod", Resource: "pods"}
	for _, want := range []Sorted{
		{},
		{Query: 1<<64 - 1, SortedPosition: planner.SortedPosition{Position: pos, Values: []object.SortValue{
			{Kind: object.String, Str: "Running"}, {Kind: object.Number, Num: -2.5}, {Kind: object.Time, Num: 1.7e15}, {}}}},
		{Query: 7, SortedPosition: planner.SortedPosition{Position: pos, Values: []object.SortValue{{Kind: object.String, Str: ""}}}},
	} {
		c := EncodeSorted(want)
		got, err := DecodeSorted(c)
		if err != nil {
			t.Fatalf("decode %s: %v", c, err)
		}
		if want.Values == nil {
			want.Values = []object.SortValue{}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if _, err := DecodePage(c); !errors.Is(err, ErrKind) {
			t.Errorf("a sorted cursor as a page cursor: %v, want ErrKind", err)
		}
	}
}

func TestErrors(t *testing.T) {
	page := EncodePage(object.Position{Cluster: "c1", Namespace: "ns", Name: "n", Kind: "Pod", Resource: "pods"})
	rev := EncodeRevision(Revision{Epoch: "epoch", Revision: 9})
	raw, _ := base64.RawURLEncoding.DecodeString(page)
	flipped := append([]byte(nil), raw...)
	flipped[3] ^= 1
	retagged := append([]byte(nil), raw...)
	retagged[0] = tagRevision
	unknown := seal([]byte{'X', 1, 2})
	trailing := seal(append(append([]byte(nil), raw[:len(raw)-4]...), 0))
	for _, tc := range []struct {
		name   string
		cursor string
		page   error // DecodePage's error
		rev    error // DecodeRevision's error
	}{
		{name: "empty", cursor: "", page: ErrMalformed, rev: ErrMalformed},
		{name: "not base64", cursor: "***", page: ErrMalformed, rev: ErrMalformed},
		{name: "padded", cursor: page + "==", page: ErrMalformed, rev: ErrMalformed},
		{name: "garbage", cursor: base64.RawURLEncoding.EncodeToString([]byte("hello, world")), page: ErrMalformed, rev: ErrMalformed},
		{name: "bit flipped", cursor: base64.RawURLEncoding.EncodeToString(flipped), page: ErrMalformed, rev: ErrMalformed},
		{name: "retagged", cursor: base64.RawURLEncoding.EncodeToString(retagged), page: ErrMalformed, rev: ErrMalformed},
		{name: "unknown version", cursor: unknown, page: ErrMalformed, rev: ErrMalformed},
		{name: "trailing bytes", cursor: trailing, page: ErrMalformed, rev: ErrKind},
		{name: "too long", cursor: strings.Repeat("A", maxLen+1), page: ErrMalformed, rev: ErrMalformed},
		{name: "page cursor", cursor: page, rev: ErrKind},
		{name: "revision cursor", cursor: rev, page: ErrKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodePage(tc.cursor); !errors.Is(err, tc.page) || (tc.page == nil) != (err == nil) {
				t.Errorf("DecodePage error = %v, want %v", err, tc.page)
			}
			if _, err := DecodeRevision(tc.cursor); !errors.Is(err, tc.rev) || (tc.rev == nil) != (err == nil) {
				t.Errorf("DecodeRevision error = %v, want %v", err, tc.rev)
			}
		})
	}
}

func cursorSeeds(f *testing.F) {
	f.Add(EncodePage(object.Position{Cluster: "c1", Namespace: "web", Name: "web-1", Kind: "Pod", Resource: "pods"}))
	f.Add(EncodePage(object.Position{}))
	f.Add(EncodeRevision(Revision{Epoch: "0123456789abcdef", Revision: 12345}))
	f.Add("")
	f.Add("not-a-cursor")
	f.Add("UAJjMQN3ZWIFd2ViLTEDUG9kBHBvZHOlM9PV")
	f.Add(strings.Repeat("_", 64))
}

// FuzzDecodePage checks that decoding never panics, that what decodes
// re-encodes to the same cursor, and that errors are typed.
func FuzzDecodePage(f *testing.F) {
	cursorSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePage(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrKind) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if again := EncodePage(p); again != s {
			t.Fatalf("%q decodes to %+v, which encodes to %q", s, p, again)
		}
	})
}

// FuzzDecodeRevision is FuzzDecodePage for revision cursors.
func FuzzDecodeRevision(f *testing.F) {
	cursorSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeRevision(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrKind) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if again := EncodeRevision(c); again != s {
			t.Fatalf("%q decodes to %+v, which encodes to %q", s, c, again)
		}
	})
}
