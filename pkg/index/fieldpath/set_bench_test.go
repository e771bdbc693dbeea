package fieldpath_test

import (
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// BenchmarkProjection reads the paths the index keeps beside a realistic
// Pod's body (the field indexes' and relations', index.IndexedPaths) as a
// Set, in one walk, and one path at a time, as object.Object did before.
//
//	go test -run '^$' -bench BenchmarkProjection ./pkg/index/fieldpath/
func BenchmarkProjection(b *testing.B) {
	paths := index.New(index.Options{}).IndexedPaths("pods")
	set := fieldpath.NewSet(paths)
	o := graphqltest.RealisticPod(&object.Type{Resource: "pods", Kind: "Pod"}, "c1", 12345, time.Now())
	d := fieldpath.Members("c1", o.Raw())
	// The values' bytes, as object.Object keeps them.
	values := func() int {
		f := set.Read(d)
		defer f.Release()
		n := 0
		for i := range set.Len() {
			n += len(f.JSON(i))
		}
		return n
	}
	want := values()
	b.Run("set", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n := values(); n != want {
				b.Fatalf("%d bytes of values, want %d", n, want)
			}
		}
		b.ReportMetric(float64(len(paths)), "paths")
	})
	b.Run("each-path", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			n := 0
			for _, p := range paths {
				buf = p.AppendJSONIn(buf[:0], d)
				n += len(buf)
			}
			if n != want {
				b.Fatalf("%d bytes of values, want %d", n, want)
			}
		}
	})
}
