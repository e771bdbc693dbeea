package snapshot

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode feeds the decoders of the store's keys and values bytes that
// a damaged file could hold: they refuse them or decode them, never panic,
// and what they decode encodes to bytes that decode to the same.
func FuzzDecode(f *testing.F) {
	f.Add(state{cur: 3, next: 4, revision: 99, epoch: "e", nextEpoch: "f"}.encode())
	f.Add(encodeMeta(StreamMeta{Group: "apps", Version: "v1", Kind: "Deployment", Namespaced: true, Clock: 7, Since: 2, Pruned: 1}))
	f.Add(encodeTomb(Tomb{Object: Object{ObjectKey: ObjectKey{Namespace: "ns", Name: "n"}, Value: []byte(`{}`)}, RV: 5, At: t0}))
	f.Add(objectKey(1, ObjectKey{"c", "pods", "ns", "n"}))
	f.Add(tombKey(2, StreamKey{"c", "pods"}, 42))
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, ok := decodeState(b); ok {
			again, ok := decodeState(st.encode())
			if d := cmp.Diff(st, again, cmp.AllowUnexported(state{})); !ok || d != "" {
				t.Errorf("state round trip (-first +again):\n%s", d)
			}
		}
		if m, ok := decodeMeta(StreamKey{}, b); ok {
			again, ok := decodeMeta(StreamKey{}, encodeMeta(m))
			if d := cmp.Diff(m, again); !ok || d != "" {
				t.Errorf("meta round trip (-first +again):\n%s", d)
			}
		}
		var tb, again Tomb
		if decodeTomb(&tb, b) {
			tb.Value = append([]byte(nil), tb.Value...)
			if !decodeTomb(&again, encodeTomb(tb)) || !tb.At.Equal(again.At) || tb.RV != again.RV || tb.Name != again.Name ||
				tb.Namespace != again.Namespace || string(tb.Value) != string(again.Value) {
				t.Errorf("tomb round trip: %+v, then %+v", tb, again)
			}
		}
		if p, ok := parseKey(b); ok && p.stream.Cluster == "" {
			t.Errorf("parseKey(%q) gives an empty cluster", b)
		}
	})
}

func TestKeyOrder(t *testing.T) {
	// Byte order of the keys is the order of (cluster, resource) as
	// strings, whatever the names' prefixes.
	keys := []StreamKey{{"a", "pods"}, {"a", "pods.x"}, {"a-b", "apps"}, {"ab", "a"}, {"b", "a"}}
	for i := 1; i < len(keys); i++ {
		if string(metaKey(1, keys[i-1])) >= string(metaKey(1, keys[i])) {
			t.Errorf("%v sorts after %v", keys[i-1], keys[i])
		}
		if string(streamEnd(1, keys[i-1])) > string(metaKey(1, keys[i])) {
			t.Errorf("the end of %v is after %v", keys[i-1], keys[i])
		}
	}
}
