package cursor

import (
	"errors"
	"testing"

	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// FuzzPayload fuzzes what lies behind a cursor's checksum, which
// FuzzDecodePage's random strings almost never get past: any tag and
// payload, sealed as the encoders seal them. A cursor that decodes must be
// the only encoding of what it holds, so that a client cannot make two
// cursors of one position (or revision) by writing its own; one of the
// other kind must be told apart by its tag.
func FuzzPayload(f *testing.F) {
	for _, seed := range []struct {
		tag     byte
		payload []byte
	}{
		{tagPage, []byte("\x02c1\x03web\x05web-1\x03Pod\x04pods")},
		{tagPage, []byte("\x00\x00\x00\x00\x00")},
		{tagPage, []byte("\x80\x00\x00\x00\x00\x00")}, // a length of zero in two bytes
		{tagPage, []byte("\x02c1\x00\x00\x00")},
		{tagRevision, []byte("\x10" + "0123456789abcdef" + "\xb9\x60")},
		{tagRevision, []byte("\x00\x00")},
		{tagRevision, []byte("\x00\x80\x00")},
		{tagRevision, []byte("\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")},
		{tagRevision, []byte("\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02")},
		{tagSorted, []byte("\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x01x\x02\x41\xd0\x00\x00\x00\x00\x00\x00\x00\x02c1\x00\x01p\x03Pod\x04pods")},
		{tagSorted, []byte("\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x7f\xf8\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00")}, // NaN
		{'X', nil},
		{tagPage, make([]byte, maxLen)}, // too long to be a cursor
	} {
		f.Add(seed.tag, seed.payload)
	}
	f.Fuzz(func(t *testing.T, tag byte, payload []byte) {
		s := seal(append([]byte{tag}, payload...))
		p, pageErr := DecodePage(s)
		r, revErr := DecodeRevision(s)
		sorted, sortedErr := DecodeSorted(s)
		if sortedErr == nil {
			if again := EncodeSorted(sorted); again != s {
				t.Fatalf("%q decodes to %+v, which encodes to %q", s, sorted, again)
			}
		}
		if pageErr == nil {
			if again := EncodePage(p); again != s {
				t.Fatalf("%q decodes to %+v, which encodes to %q", s, p, again)
			}
		}
		if revErr == nil {
			if again := EncodeRevision(r); again != s {
				t.Fatalf("%q decodes to %+v, which encodes to %q", s, r, again)
			}
		}
		for _, err := range []error{pageErr, revErr, sortedErr} {
			if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrKind) {
				t.Fatalf("untyped error %v", err)
			}
		}
		switch {
		case len(s) > maxLen:
			if !errors.Is(pageErr, ErrMalformed) || !errors.Is(revErr, ErrMalformed) || !errors.Is(sortedErr, ErrMalformed) {
				t.Fatalf("cursor of %d characters: %v; %v, want ErrMalformed", len(s), pageErr, revErr)
			}
		case tag == tagPage:
			if !errors.Is(revErr, ErrKind) || !errors.Is(sortedErr, ErrKind) {
				t.Fatalf("page cursor %q as a revision cursor: %v, want ErrKind", s, revErr)
			}
		case tag == tagRevision:
			if !errors.Is(pageErr, ErrKind) || !errors.Is(sortedErr, ErrKind) {
				t.Fatalf("revision cursor %q as a page cursor: %v, want ErrKind", s, pageErr)
			}
		case tag == tagSorted:
			if !errors.Is(pageErr, ErrKind) || !errors.Is(revErr, ErrKind) {
				t.Fatalf("sorted cursor %q as a page or revision cursor: %v; %v, want ErrKind", s, pageErr, revErr)
			}
		default:
			if pageErr == nil || revErr == nil || sortedErr == nil {
				t.Fatalf("cursor %q with tag %q accepted", s, tag)
			}
		}
	})
}

// base64URL is the alphabet of cursors.
const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// FuzzMutation changes one character of a valid cursor, as a client
// editing a cursor by hand would. The checksum must catch it: the result
// is rejected, unless it is the very same cursor, and never passes as a
// cursor of the other kind.
func FuzzMutation(f *testing.F) {
	f.Add("c1", "web", "web-1", "0123456789abcdef", uint64(12345), uint16(3), byte('A'))
	f.Add("", "", "", "", uint64(0), uint16(0), byte(0))
	f.Add("c1", "", "kube-system", "e", uint64(1<<64-1), uint16(1000), byte(63))
	f.Add("ü/é", "ns", "a\x00b", "epoch", uint64(7), uint16(11), byte('_'))
	f.Fuzz(func(t *testing.T, cluster, namespace, name, epoch string, revision uint64, at uint16, to byte) {
		pos := object.Position{Cluster: cluster, Namespace: namespace, Name: name, Kind: "Pod", Resource: "pods"}
		sorted := Sorted{Query: revision, SortedPosition: planner.SortedPosition{Position: pos,
			Values: []object.SortValue{{Kind: object.String, Str: epoch}, {Kind: object.Time, Num: float64(revision)}, {}}}}
		for _, valid := range []string{EncodePage(pos), EncodeRevision(Revision{Epoch: epoch, Revision: revision}), EncodeSorted(sorted)} {
			if len(valid) > maxLen {
				continue
			}
			b := []byte(valid)
			i := int(at) % len(b)
			b[i] = base64URL[int(to)%len(base64URL)]
			mutated := string(b)
			p, pageErr := DecodePage(mutated)
			r, revErr := DecodeRevision(mutated)
			c, sortedErr := DecodeSorted(mutated)
			switch {
			case mutated == valid:
				if pageErr != nil && revErr != nil && sortedErr != nil {
					t.Fatalf("valid cursor %q rejected: %v; %v", valid, pageErr, revErr)
				}
			case pageErr == nil:
				t.Fatalf("%q, %q with character %d changed, decodes to page cursor %+v", valid, mutated, i, p)
			case revErr == nil:
				t.Fatalf("%q, %q with character %d changed, decodes to revision cursor %+v", valid, mutated, i, r)
			case sortedErr == nil:
				t.Fatalf("%q, %q with character %d changed, decodes to sorted cursor %+v", valid, mutated, i, c)
			}
		}
	})
}
