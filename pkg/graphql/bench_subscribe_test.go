package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// The subscription benchmarks run on synthetic ConfigMaps written straight
// into an index; every subscriber is a goroutine calling Next in a loop, as
// a transport's would (without encoding or writing the payload). Run them
// with
//
//	go test -run '^$' -bench 'Subscri|Fanout' -benchtime 1x ./pkg/graphql/

// latencies is graphqltest.Latencies.
type latencies = graphqltest.Latencies

// benchFleet is an index with a started Server over it and a writer that
// upserts synthetic ConfigMaps, recording when each revision was applied.
type benchFleet struct {
	*graphqltest.Writer
	s *Server
}

func newBenchFleet(b *testing.B, opts Options, changes int) *benchFleet {
	ix := index.New(index.Options{})
	s := startServer(b, ix, health.NewTracker(ix, health.Options{}), opts)
	return &benchFleet{Writer: graphqltest.NewWriter(ix, changes), s: s}
}

// follow runs one reader per subscription until each has read want
// events or ended; it returns the merged latencies and how many
// subscriptions overflowed.
func (f *benchFleet) follow(b *testing.B, subs []*Subscription, want func(i int) int) (*latencies, int) {
	var all latencies
	var mu sync.Mutex
	var overflows atomic.Int64
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Go(func() {
			l := new(latencies)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for got := 0; got < want(i); {
				res, err := sub.Next(ctx)
				if errors.Is(err, ErrSlowConsumer) {
					overflows.Add(1)
					break
				}
				if err != nil {
					b.Errorf("Next: %v", err)
					break
				}
				if res.Extensions["heartbeat"] == true {
					continue
				}
				c, err := cursor.DecodeRevision(res.Extensions["cursor"].(string))
				if err != nil {
					b.Error(err)
					break
				}
				l.Add(f.Latency(c.Revision))
				got++
			}
			mu.Lock()
			all.Merge(l)
			mu.Unlock()
		})
	}
	wg.Wait()
	return &all, int(overflows.Load())
}

const benchQuery = graphqltest.BenchQuery

// BenchmarkFanoutLatency measures the time from the start of an index
// apply to Next returning the change, at 1,000 changes/s, for 1 to 10,000
// subscribers. match=all: every subscriber's filter matches every change
// (the worst case: subscribers × 1,000 deliveries/s); match=1%: the
// subscribers follow 100 namespaces and each change is in one of them.
func BenchmarkFanoutLatency(b *testing.B) {
	const rate, changes = 1000, 1000
	for _, match := range []string{"all", "1%"} {
		for _, n := range []int{1, 100, 1000, 10000} {
			if match == "1%" && n < 100 {
				continue
			}
			b.Run(fmt.Sprintf("match=%s/subscribers=%d", match, n), func(b *testing.B) {
				objs := graphqltest.BenchObjects(b)
				var total latencies
				overflows := 0
				for b.Loop() {
					f := newBenchFleet(b, Options{}, changes)
					subs := make([]*Subscription, n)
					for i := range subs {
						vars := map[string]any{"f": map[string]any{"clusters": []any{"c1"}}}
						if match != "all" {
							vars = map[string]any{"f": map[string]any{"namespaces": []any{fmt.Sprintf("ns-%d", i%100)}}}
						}
						subs[i] = subscribe(b, f.s, benchQuery, vars)
					}
					want := func(int) int { return changes }
					if match != "all" {
						want = func(int) int { return changes / 100 }
					}
					done := make(chan struct{})
					var l *latencies
					var o int
					base := runtime.NumGoroutine()
					go func() { l, o = f.follow(b, subs, want); close(done) }()
					waitForGoroutines(base, n) // every reader waits in Next
					f.Write(objs, changes, rate, nil)
					<-done
					total.Merge(l)
					overflows += o
					for _, sub := range subs {
						sub.Close()
					}
				}
				b.ReportMetric(float64(total.Quantile(0.5))/1e6, "p50-ms")
				b.ReportMetric(float64(total.Quantile(0.99))/1e6, "p99-ms")
				b.ReportMetric(float64(total.Quantile(1))/1e6, "max-ms")
				b.ReportMetric(float64(total.Count())/float64(b.N), "deliveries/op")
				b.ReportMetric(float64(overflows), "overflows")
			})
		}
	}
}

// BenchmarkIdleSubscriptionMemory measures what an idle resourceEvents
// subscription costs: heap and goroutine stacks, with a goroutine waiting
// in Next as a transport's would, measured with runtime.MemStats before
// and after opening them. filters=distinct gives each its own filter (its
// own groups and matcher), filters=shared one filter for all.
func BenchmarkIdleSubscriptionMemory(b *testing.B) {
	const n = 10000
	for _, filters := range []string{"distinct", "shared"} {
		b.Run("filters="+filters, func(b *testing.B) {
			var perSub, heapPerSub float64
			for b.Loop() {
				ix := index.New(index.Options{})
				s := startServer(b, ix, health.NewTracker(ix, health.Options{}), Options{})
				ctx, cancel := context.WithCancel(b.Context())
				// Warm the document cache and the schema.
				subscribe(b, s, benchQuery, nil).Close()
				before := graphqltest.Memory()
				subs := make([]*Subscription, n)
				for i := range subs {
					f := map[string]any{"namespaces": []any{"ns"}}
					if filters == "distinct" {
						f = map[string]any{"namespaces": []any{fmt.Sprintf("ns-%d", i)}}
					}
					sub, res := s.Subscribe(ctx, Request{Query: benchQuery, Variables: map[string]any{"f": f}})
					if sub == nil {
						b.Fatal(res.Errors)
					}
					subs[i] = sub
				}
				heap := graphqltest.Memory()
				base := runtime.NumGoroutine()
				var wg sync.WaitGroup
				for _, sub := range subs {
					wg.Go(func() { _, _ = sub.Next(ctx) })
				}
				waitForGoroutines(base, n)
				after := graphqltest.Memory()
				perSub = float64(after.Total()-before.Total()) / n
				heapPerSub = float64(heap.Heap-before.Heap) / n
				cancel()
				wg.Wait()
				for _, sub := range subs {
					sub.Close()
				}
			}
			b.ReportMetric(perSub, "B/subscription")
			b.ReportMetric(heapPerSub, "heap-B/subscription")
		})
	}
}

// waitForGoroutines waits until n more goroutines run than base, and lets
// them block.
func waitForGoroutines(base, n int) {
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() < base+n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let them block in Next
}

// BenchmarkSustainedRate finds the change rate one instance sustains to
// 1,000 subscribers whose filters match every change, before the first
// subscription overflows its buffer (Options.Fanout.Buffer, 1024):
// the writer doubles its rate every second, from 1,000 changes/s, until a
// subscription ends as a slow consumer. It reports the last rate without
// overflow.
//
// reader=next: the subscribers only call Next; reader=json: they also
// encode each payload with json.Marshal, which re-validates the bytes a
// shared payload was encoded to once (about 1.5 µs each), as a transport
// that wraps the payload in its message with encoding/json would.
func BenchmarkSustainedRate(b *testing.B) {
	for _, reader := range []string{"next", "json"} {
		b.Run("reader="+reader, func(b *testing.B) { sustainedRate(b, reader == "json") })
	}
}

func sustainedRate(b *testing.B, encode bool) {
	const n = 1000
	rates := []int{1000, 1500, 2000, 3000, 4000, 6000, 8000, 12000, 16000, 24000, 32000, 48000, 64000}
	var sustained float64
	for b.Loop() {
		total := 0
		for _, r := range rates {
			total += r
		}
		objs := graphqltest.BenchObjects(b)
		f := newBenchFleet(b, Options{}, total)
		subs := make([]*Subscription, n)
		for i := range subs {
			subs[i] = subscribe(b, f.s, benchQuery, nil)
		}
		stop := make(chan struct{})
		var once sync.Once
		var overflowed atomic.Bool
		var wg sync.WaitGroup
		for _, sub := range subs {
			wg.Go(func() {
				for {
					res, err := sub.Next(context.Background())
					switch {
					case errors.Is(err, ErrSlowConsumer):
						overflowed.Store(true)
						once.Do(func() { close(stop) })
						return
					case err != nil:
						return
					}
					if !encode {
						continue
					}
					if _, err := json.Marshal(res); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		sustained = 0
		for _, rate := range rates {
			// One second at this rate.
			f.Write(objs, rate, rate, stop)
			if overflowed.Load() {
				break
			}
			// Let the subscribers drain what is queued, so that each step
			// starts even.
			deadline := time.Now().Add(2 * time.Second)
			for !drained(f.s.hub) && !overflowed.Load() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if overflowed.Load() || !drained(f.s.hub) {
				break
			}
			sustained = float64(rate)
		}
		once.Do(func() { close(stop) })
		for _, sub := range subs {
			sub.Close()
		}
		wg.Wait()
	}
	b.ReportMetric(sustained, "changes/s")
}

// drained reports whether no subscriber of h has deliveries waiting.
func drained(h *fanout.Hub[*operation, *Result]) bool { return h.Queued() == 0 }
