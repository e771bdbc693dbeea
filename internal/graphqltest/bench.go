package graphqltest

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// EventsQuery is a resourceEvents subscription with a filter and a since
// cursor, both optional.
const EventsQuery = `subscription($filter: ResourceFilter, $since: String) {
  resourceEvents(filter: $filter, since: $since) { type cursor resource { name labels } }
}`

// PageQuery is a page of resources with a filter, first and after, all
// optional.
const PageQuery = `query($filter: ResourceFilter, $first: Int, $after: String) {
  resources(filter: $filter, first: $first, after: $after) {
    edges { cursor node { cluster kind namespace name } }
    pageInfo { hasNextPage endCursor }
    totalCount revision staleClusters
  }
}`

// BenchQuery is the subscription of the fan-out benchmarks.
const BenchQuery = `subscription($f: ResourceFilter) { resourceEvents(filter: $f) { type cursor resource { name namespace resourceVersion } } }`

// Latencies is a histogram of durations with buckets 5% apart, cheap
// enough for one per subscriber.
type Latencies struct {
	buckets [420]uint32 // bucket i holds [1.05^i, 1.05^(i+1)) µs
	n       uint64
}

// Add records d.
func (l *Latencies) Add(d time.Duration) {
	us := float64(d) / float64(time.Microsecond)
	i := 0
	if us > 1 {
		i = min(int(math.Log(us)/math.Log(1.05)), len(l.buckets)-1)
	}
	l.buckets[i]++
	l.n++
}

// Merge adds o's records to l's.
func (l *Latencies) Merge(o *Latencies) {
	for i, c := range o.buckets {
		l.buckets[i] += c
	}
	l.n += o.n
}

// Count returns how many durations were recorded.
func (l *Latencies) Count() uint64 { return l.n }

// Quantile returns the upper bound of the bucket holding quantile q.
func (l *Latencies) Quantile(q float64) time.Duration {
	want := uint64(math.Ceil(q * float64(l.n)))
	var seen uint64
	for i, c := range l.buckets {
		if seen += uint64(c); seen >= want && c > 0 {
			return time.Duration(math.Pow(1.05, float64(i+1)) * float64(time.Microsecond))
		}
	}
	return 0
}

// MemStats is the memory in use after a collection.
type MemStats struct{ Heap, Stack uint64 }

// Total is the heap and the stacks in use.
func (m MemStats) Total() uint64 { return m.Heap + m.Stack }

// Memory collects garbage twice and returns what stays in use.
func Memory() MemStats {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return MemStats{Heap: ms.HeapAlloc, Stack: ms.StackInuse}
}

// BenchObjects are the synthetic ConfigMaps a Writer cycles through, ten
// in each namespace ns-0 … ns-99.
func BenchObjects(b testing.TB) []*object.Object {
	out := make([]*object.Object, 1000)
	for i := range out {
		out[i] = Version(b, "c1", fmt.Sprintf("ns-%d", i%100), fmt.Sprintf("cm-%d", i/100), "0", map[string]string{"app": "web"})
	}
	return out
}

// Writer upserts synthetic ConfigMaps into an index, recording when each
// revision was applied.
type Writer struct {
	Index *index.Index
	// Base is the index revision before the first change.
	Base uint64
	// applied[r-Base] is when revision r started to be applied, in
	// nanoseconds since start.
	applied []atomic.Int64
	start   time.Time
	seq     int
}

// NewWriter returns a writer of up to changes changes to ix.
func NewWriter(ix *index.Index, changes int) *Writer {
	return &Writer{Index: ix, Base: ix.Revision(), applied: make([]atomic.Int64, changes+1), start: time.Now()}
}

// Write applies count changes at rate changes per second, in steps of 1
// ms, and stops early when stop is closed. Each change is a new version of
// one of objs, which it cycles through. It returns how many it applied.
func (w *Writer) Write(objs []*object.Object, count, rate int, stop <-chan struct{}) int {
	begin := time.Now()
	n := 0
	for n < count {
		due := int(time.Since(begin).Seconds()*float64(rate)) + 1
		for ; n < min(due, count); n++ {
			w.seq++
			o := *objs[w.seq%len(objs)]
			o.ResourceVersion = strconv.Itoa(w.seq)
			w.applied[w.Index.Revision()+1-w.Base].Store(int64(time.Since(w.start)))
			w.Index.Upsert(&o)
		}
		select {
		case <-stop:
			return n
		case <-time.After(time.Millisecond):
		}
	}
	return n
}

// Latency returns how long ago revision r was applied.
func (w *Writer) Latency(r uint64) time.Duration {
	return time.Since(w.start) - time.Duration(w.applied[r-w.Base].Load())
}
