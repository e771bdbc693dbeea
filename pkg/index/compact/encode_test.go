package compact_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// realisticPods returns the JSON of n realistic Pods and where status
// begins in each.
func realisticPods(n int) (raws [][]byte, status []int) {
	typ := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		raw := graphqltest.RealisticPod(typ, "c1", i, base).Raw()
		raws = append(raws, raw)
		status = append(status, fieldpath.Members("c1", raw).Status)
	}
	return raws, status
}

// s2Parts is what EncodeParts stored with s2's own encoder: the same
// form, each part compressed by s2.Dict.Encode, in buf.
func s2Parts(d *s2.Dict, buf *[3][]byte, raw []byte, at int) []byte {
	for i, n := range []int{s2.MaxEncodedLen(at), s2.MaxEncodedLen(len(raw) - at), len(raw) + 32} {
		if cap(buf[i]) < n {
			buf[i] = make([]byte, n)
		}
	}
	first, second := d.Encode(buf[0], raw[:at]), d.Encode(buf[1], raw[at:])
	head := binary.AppendUvarint(binary.AppendUvarint(append(buf[2][:0], 4), uint64(at)), uint64(len(first)))
	return append(append(head, first...), second...)
}

// TestEncodeAgainstS2 checks the Codec's encoder against s2's on
// realistic Pods: every body decodes to its JSON, and the bodies are no
// larger than s2's (within 2 %).
func TestEncodeAgainstS2(t *testing.T) {
	raws, status := realisticPods(6000)
	c := compact.NewCodec("pods", 0)
	mine, theirs, compressed := 0, 0, 0
	var lib *s2.Dict
	var buf [3][]byte
	for i, raw := range raws {
		b := c.EncodeParts(raw, status[i])
		got, err := c.Decode(nil, b)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("pod %d: decodes to %q, %v", i, got, err)
		}
		if !b.Compressed() {
			continue
		}
		if lib == nil {
			lib = s2.NewDict(c.Dict())
		}
		compressed++
		mine += len(b)
		theirs += len(s2Parts(lib, &buf, raw, status[i]))
	}
	if compressed < 1000 {
		t.Fatalf("only %d of %d bodies compressed", compressed, len(raws))
	}
	t.Logf("%d bodies: %.1f B each, s2's encoder %.1f B", compressed, float64(mine)/float64(compressed), float64(theirs)/float64(compressed))
	if float64(mine) > 1.02*float64(theirs) {
		t.Errorf("bodies of %.1f B, s2's encoder's %.1f B: more than 2 %% larger", float64(mine)/float64(compressed), float64(theirs)/float64(compressed))
	}
}

// BenchmarkEncodeParts compresses realistic Pods in two parts, with the
// Codec's encoder and with s2's (the same dictionary), reporting the
// stored bytes of each.
func BenchmarkEncodeParts(b *testing.B) {
	raws, status := realisticPods(4000)
	c := compact.NewCodec("pods", 0)
	for i := 0; !c.Trained(); i++ {
		c.EncodeParts(raws[i], status[i])
	}
	lib := s2.NewDict(c.Dict())
	b.Run("encoder=fleetcache", func(b *testing.B) {
		size, i := 0, 0
		for b.Loop() {
			size += len(c.EncodeParts(raws[i%len(raws)], status[i%len(raws)]))
			i++
		}
		b.ReportMetric(float64(size)/float64(i), "B/body")
	})
	b.Run("encoder=s2", func(b *testing.B) {
		size, i := 0, 0
		var buf [3][]byte
		for b.Loop() {
			size += len(s2Parts(lib, &buf, raws[i%len(raws)], status[i%len(raws)]))
			i++
		}
		b.ReportMetric(float64(size)/float64(i), "B/body")
	})
}
