package snapshot

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"testing"
)

// bodyPool holds n Pod bodies of about size bytes: objects take them in
// turn, so that the benchmarks measure the store, not the making of JSON.
func bodyPool(n, size int) [][]byte {
	pool := make([][]byte, n)
	for i := range pool {
		pool[i] = body(i, size)
	}
	return pool
}

const (
	benchBodySize = 2500
	benchClusters = 10
)

// benchObject is object i of a fleet of benchClusters clusters.
func benchObject(i int, pool [][]byte) Object {
	return Object{
		ObjectKey: ObjectKey{Cluster: fmt.Sprintf("cluster-%02d", i%benchClusters), Resource: "pods",
			Namespace: fmt.Sprintf("team-%d", i%40), Name: fmt.Sprintf("pod-%07d", i)},
		Value: pool[i%len(pool)],
	}
}

// tableBytes is the size of the store's table files: what it settles to
// once the write-ahead log is flushed and recycled.
func tableBytes(b *testing.B, dir string) int64 {
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func benchStreams() []StreamMeta {
	var out []StreamMeta
	for c := range benchClusters {
		out = append(out, meta(fmt.Sprintf("cluster-%02d", c), "pods", 1))
	}
	return out
}

// BenchmarkApply applies batches of 1,000 changes of Pods of 2.5 KB to a
// fleet of 100,000: puts, with a delete and a tomb for every tenth.
func BenchmarkApply(b *testing.B) {
	const changes, fleet = 1000, 100_000
	b.Run(fmt.Sprintf("changes=%d", changes), func(b *testing.B) {
		dir := b.TempDir()
		s := openStore(b, dir, Options{})
		pool := bodyPool(2000, benchBodySize)
		if err := s.Apply(Batch{Revision: 1, Streams: benchStreams()}); err != nil {
			b.Fatal(err)
		}
		next, rev := 0, uint64(1)
		written := map[int]bool{}
		batch := func() Batch {
			rev++
			bt := Batch{Revision: rev}
			for j := range changes {
				i := next % fleet
				next++
				o := benchObject(i, pool)
				if j%10 == 9 && written[i] {
					bt.Delete = append(bt.Delete, o.ObjectKey)
					bt.Tombs = append(bt.Tombs, Tomb{Object: o, RV: rev, At: t0})
					delete(written, i)
					continue
				}
				bt.Put = append(bt.Put, o)
				written[i] = true
			}
			return bt
		}
		b.ReportAllocs()
		var bytes int64
		for b.Loop() {
			b.StopTimer()
			bt := batch()
			for _, o := range bt.Put {
				bytes += int64(len(o.Value))
			}
			b.StartTimer()
			if err := s.Apply(bt); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*changes), "ns/change")
		b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/(1<<20), "MB/s")
		if err := s.flush(); err != nil {
			b.Fatal(err)
		}
		size, err := s.Size()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(size)/float64(len(written)), "disk-bytes/object")
		b.ReportMetric(float64(tableBytes(b, dir))/float64(len(written)), "table-bytes/object")
	})
}

// BenchmarkLoad loads a store of Pods of 2.5 KB in 10 clusters, settled
// (flushed and compacted), touching
// each object's body as the index would when it decodes it.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{100_000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			s := openStore(b, dir, Options{})
			pool := bodyPool(2000, benchBodySize)
			bt := Batch{Revision: 1, Streams: benchStreams()}
			for i := range n {
				bt.Put = append(bt.Put, benchObject(i, pool))
				if len(bt.Put) == 1000 || i == n-1 {
					if err := s.Apply(bt); err != nil {
						b.Fatal(err)
					}
					bt = Batch{Revision: bt.Revision + 1}
				}
			}
			if err := s.flush(); err != nil {
				b.Fatal(err)
			}
			if err := s.compact(); err != nil {
				b.Fatal(err)
			}
			size, err := s.Size()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				count, sum := 0, 0
				_, _, err := s.Load(nil, func(_ StreamMeta, objects iter.Seq[Object], tombs iter.Seq[Tomb]) error {
					for o := range objects {
						count++
						sum += len(o.Value)
					}
					for range tombs {
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if count != n || sum == 0 {
					b.Fatalf("loaded %d objects, want %d", count, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
			b.ReportMetric(float64(size)/float64(n), "disk-bytes/object")
			b.ReportMetric(float64(tableBytes(b, dir))/float64(n), "table-bytes/object")
		})
	}
}
