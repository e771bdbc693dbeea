package warmstart

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TestRecord: a record decodes to the object's stored form and its text
// tokens; every shorter or damaged record is an error, never a panic.
func TestRecord(t *testing.T) {
	o := indextest.Obj("c1", indextest.PodType, "ns", "p", indextest.WithRaw(`{"metadata":{"name":"p"},"spec":{"x":1}}`))
	o.Labels = object.Labels{{Key: "app", Value: "a"}, {Key: "tier", Value: "fe"}}
	o.Owners = []object.OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1", Controller: true}}
	o.SetCreated(time.Unix(-5, 7)) // before 1970: the uvarint holds its two's complement
	rec := appendRecord(nil, o, []string{"nginx", "v1"})
	s, text, err := decodeRecord("ns", "p", rec)
	if err != nil {
		t.Fatal(err)
	}
	want := o.Stored()
	if diff := cmp.Diff(want, s, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"nginx", "v1"}, text); diff != "" {
		t.Errorf("text tokens (-want +got):\n%s", diff)
	}
	for n := range len(rec) - len(want.Body) {
		if _, _, err := decodeRecord("ns", "p", rec[:n]); err == nil {
			t.Errorf("a record cut to %d of %d bytes decoded", n, len(rec))
		}
	}
	for i := range rec {
		bad := append([]byte(nil), rec...)
		bad[i] ^= 0xff
		_, _, _ = decodeRecord("ns", "p", bad) // no panic
	}
}
