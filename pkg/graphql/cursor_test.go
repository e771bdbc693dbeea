package graphql

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index"
)

func TestPageCursorRoundTrip(t *testing.T) {
	for _, p := range []index.Position{
		{},
		{Cluster: "c1", Namespace: "web", Name: "web-1", Kind: "Pod", Resource: "pods"},
		{Cluster: "c1", Name: "kube-system", Kind: "Namespace", Resource: "namespaces"},
		{Cluster: "ü/é", Namespace: strings.Repeat("n", 300), Name: "a\x00b", Kind: "Deployment.apps", Resource: "deployments.apps"},
	} {
		c := encodePageCursor(p)
		got, err := decodePageCursor(c)
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

func TestRevisionCursorRoundTrip(t *testing.T) {
	for _, want := range []revisionCursor{{}, {Epoch: "0123456789abcdef", Revision: 42}, {Epoch: "e", Revision: 1<<64 - 1}} {
		got, err := decodeRevisionCursor(encodeRevisionCursor(want.Epoch, want.Revision))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("round trip = %+v, want %+v", got, want)
		}
	}
	c, _ := decodeRevisionCursor(encodeRevisionCursor("old", 3))
	if err := c.check("old"); err != nil {
		t.Errorf("check of the same epoch: %v", err)
	}
	if err := c.check("new"); !errors.Is(err, ErrCursorExpired) {
		t.Errorf("check of another epoch = %v, want ErrCursorExpired", err)
	}
}

func TestCursorErrors(t *testing.T) {
	page := encodePageCursor(index.Position{Cluster: "c1", Namespace: "ns", Name: "n", Kind: "Pod", Resource: "pods"})
	rev := encodeRevisionCursor("epoch", 9)
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
		page   error // decodePageCursor's error
		rev    error // decodeRevisionCursor's error
	}{
		{name: "empty", cursor: "", page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "not base64", cursor: "***", page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "padded", cursor: page + "==", page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "garbage", cursor: base64.RawURLEncoding.EncodeToString([]byte("hello, world")), page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "bit flipped", cursor: base64.RawURLEncoding.EncodeToString(flipped), page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "retagged", cursor: base64.RawURLEncoding.EncodeToString(retagged), page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "unknown version", cursor: unknown, page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "trailing bytes", cursor: trailing, page: ErrCursorMalformed, rev: ErrCursorKind},
		{name: "too long", cursor: strings.Repeat("A", maxCursorLen+1), page: ErrCursorMalformed, rev: ErrCursorMalformed},
		{name: "page cursor", cursor: page, rev: ErrCursorKind},
		{name: "revision cursor", cursor: rev, page: ErrCursorKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodePageCursor(tc.cursor); !errors.Is(err, tc.page) || (tc.page == nil) != (err == nil) {
				t.Errorf("decodePageCursor error = %v, want %v", err, tc.page)
			}
			if _, err := decodeRevisionCursor(tc.cursor); !errors.Is(err, tc.rev) || (tc.rev == nil) != (err == nil) {
				t.Errorf("decodeRevisionCursor error = %v, want %v", err, tc.rev)
			}
		})
	}
}

func cursorSeeds(f *testing.F) {
	f.Add(encodePageCursor(index.Position{Cluster: "c1", Namespace: "web", Name: "web-1", Kind: "Pod", Resource: "pods"}))
	f.Add(encodePageCursor(index.Position{}))
	f.Add(encodeRevisionCursor("0123456789abcdef", 12345))
	f.Add("")
	f.Add("not-a-cursor")
	f.Add("UAJjMQN3ZWIFd2ViLTEDUG9kBHBvZHOlM9PV")
	f.Add(strings.Repeat("_", 64))
}

// FuzzDecodePageCursor checks that decoding never panics, that what decodes
// re-encodes to the same cursor, and that errors are typed.
func FuzzDecodePageCursor(f *testing.F) {
	cursorSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodePageCursor(s)
		if err != nil {
			if !errors.Is(err, ErrCursorMalformed) && !errors.Is(err, ErrCursorKind) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if again := encodePageCursor(p); again != s {
			t.Fatalf("%q decodes to %+v, which encodes to %q", s, p, again)
		}
	})
}

// FuzzDecodeRevisionCursor is FuzzDecodePageCursor for revision cursors.
func FuzzDecodeRevisionCursor(f *testing.F) {
	cursorSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeRevisionCursor(s)
		if err != nil {
			if !errors.Is(err, ErrCursorMalformed) && !errors.Is(err, ErrCursorKind) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if again := encodeRevisionCursor(c.Epoch, c.Revision); again != s {
			t.Fatalf("%q decodes to %+v, which encodes to %q", s, c, again)
		}
	})
}

// FuzzPrepare checks that any document text is parsed, validated and
// depth-checked without a panic, and that each error it reports has a code.
func FuzzPrepare(f *testing.F) {
	for _, q := range []string{
		`{ clusters { name } }`,
		pageQuery,
		`query($c: String!) { cluster(name: $c) { name } }`,
		`{ resources { edges { node { ...A } } } } fragment A on Resource { owners { ...A } }`,
		`{ __schema { types { name } } }`,
		`"""block""" { a(b: "\"") }`,
		`{`,
		`# comment` + "\n" + `{ facets(by: LABEL, labelKey: "app") { value } }`,
	} {
		f.Add(q)
	}
	fx := newFixture(f)
	s := newServer(f, fx.ix, fx.tracker, Options{DocumentCacheSize: 16})
	f.Fuzz(func(t *testing.T, q string) {
		doc, errs := s.prepare(q)
		if (doc.ast == nil) == (errs == nil) {
			t.Fatalf("prepare(%q) = %v, %v: want a document or errors", q, doc, errs)
		}
		for _, e := range errs {
			if code(e) == "" {
				t.Fatalf("prepare(%q): error without code: %v", q, e)
			}
		}
	})
}
