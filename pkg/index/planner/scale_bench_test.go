package planner_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"

	"github.com/fleetcache/fleetcache/internal/procmem"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// scaleClusters is how many clusters the scale benchmark spreads its Pods
// over.
const scaleClusters = 100

// BenchmarkIndexScale is issue 16's benchmark of the index alone: it fills
// an index with realistic Pods (graphqltest.RealisticPod, about 3 KB of
// JSON each) spread over 100 clusters, as the informers would (each type's
// bodies compressed by the resource's Codec unless compression=off), and
// reports the live heap per Pod, the apply rate of the fill (new Pods) and
// of modifications, and the p50 and p99 of the portal's reads: a page of 50
// with its total whose label selector matches 1 % of the Pods, a page in
// one namespace, pages sorted by creation time and by an unindexed path in
// a namespace, and facets. It also reports the RSS the fill added per Pod
// at the process's GOGC (true of the first fill a process makes).
//
// The Pods are spread over 100 namespaces per cluster, consecutive Pods in
// different ones (graphqltest.RealisticPod). Issue 31's reads run on a
// second fill of the same Pods laid out as Deployments are, each app in
// one namespace (graphqltest.PodAppNamespace), named
// pods=N/namespaces=by-app/compression=…: the conjunction page (a page of
// 50 and the count, as the GraphQL layer asks, of
// graphqltest.Conjunction: ns-07 and "app=app-7,tier=fe", a small label
// and a third of the Pods, in the namespace that holds the app), and
// facets by a label in ns-07 (1 % of the Pods from 1,000,000 on: 100,000
// at 10,000,000), which the spread fill also runs.
//
// FLEETCACHE_SCALE_PODS sets the sizes (comma-separated; default 1000000;
// 10,000,000 needs about 20 GiB), FLEETCACHE_SCALE_COMPRESSION=on or off
// runs one side only, FLEETCACHE_SCALE_NAMESPACES=spread or by-app one
// layout only; FLEETCACHE_SCALE_PROJECTED=off stores no values beside the
// bodies (Type.Projected), which the informers do.
func BenchmarkIndexScale(b *testing.B) {
	sizes := []int{1_000_000}
	if s := os.Getenv("FLEETCACHE_SCALE_PODS"); s != "" {
		sizes = nil
		for _, f := range splitComma(s) {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		for _, layout := range []string{"spread", "by-app"} {
			if l := os.Getenv("FLEETCACHE_SCALE_NAMESPACES"); l != "" && l != layout {
				continue
			}
			for _, mode := range []string{"on", "off"} {
				if m := os.Getenv("FLEETCACHE_SCALE_COMPRESSION"); m != "" && m != mode {
					continue
				}
				// The spread layout keeps the names it had before
				// issue 31.
				name := fmt.Sprintf("pods=%d/compression=%s", n, mode)
				if layout == "by-app" {
					name = fmt.Sprintf("pods=%d/namespaces=by-app/compression=%s", n, mode)
				}
				b.Run(name, func(b *testing.B) { benchScale(b, n, mode == "on", layout == "by-app") })
			}
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// benchScale fills an index with n realistic Pods, their namespaces
// spread or with byApp each app's in one, and measures it.
func benchScale(b *testing.B, n int, compress, byApp bool) {
	podType := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	if compress {
		podType.Codec = compact.NewCodec("pods", 0)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	perCluster := n / scaleClusters
	cluster := func(c int) string { return fmt.Sprintf("c%03d", c) }

	before := liveHeap()
	rssBefore := readRSS(b)
	ix := index.New(index.Options{Retention: 1000})
	if os.Getenv("FLEETCACHE_SCALE_PROJECTED") != "off" {
		// As the informers set up a type: the indexed paths' values
		// beside each body.
		podType.Projected = fieldpath.NewSet(ix.IndexedPaths("pods"))
	}
	// Objects are built in batches and then applied, so that the apply
	// rate is the index's alone.
	var applying time.Duration
	batch := make([]*object.Object, 0, 10_000)
	flush := func() {
		start := time.Now()
		for _, o := range batch {
			ix.Upsert(o)
		}
		applying += time.Since(start)
		batch = batch[:0]
	}
	pod := graphqltest.RealisticPod
	if byApp {
		pod = func(t *object.Type, cluster string, i int, base time.Time) *object.Object {
			return graphqltest.RealisticPodIn(t, cluster, graphqltest.PodAppNamespace(i), i, base)
		}
	}
	for c := range scaleClusters {
		for i := range perCluster {
			batch = append(batch, pod(podType, cluster(c), i, base))
			if len(batch) == cap(batch) {
				flush()
			}
		}
	}
	flush()
	// The RSS as the fill left it, at the process's GOGC, before the
	// collections that measure the live heap.
	rss := readRSS(b)
	rssPerPod := float64(rss.RSS-min(rss.RSS, rssBefore.RSS)) / float64(n)
	heap := float64(liveHeap()-before) / float64(n)
	if path := os.Getenv("FLEETCACHE_SCALE_HEAP_PROFILE"); path != "" {
		// Where the heap goes, with the index alive.
		if err := procmem.WriteHeapProfile(path); err != nil {
			b.Fatal(err)
		}
	}
	var bodies, jsonBytes, compressed int
	for _, o := range ix.Objects(cluster(0), "pods") {
		bodies += o.BodySize()
		jsonBytes += len(o.Raw())
		if o.Compressed() {
			compressed++
		}
	}
	b.Logf("%d Pods: %.0f B of live heap per Pod; bodies %.0f B for %.0f B of JSON (%d of %d compressed in %s); fill %.0f Pods/s",
		n, heap, float64(bodies)/float64(perCluster), float64(jsonBytes)/float64(perCluster), compressed, perCluster, cluster(0),
		float64(n)/applying.Seconds())
	b.Logf("RSS after the fill %d MiB (%d MiB before it, %.0f B per Pod added), peak %d MiB",
		rss.RSS>>20, rssBefore.RSS>>20, rssPerPod, rss.PeakRSS>>20)

	// Modifications: a new resourceVersion and phase for Pods across the
	// fleet, as status updates arrive.
	mods := make([]*object.Object, 0, 20_000)
	for i := range cap(mods) {
		c, j := i%scaleClusters, (i*7919)%perCluster
		o := pod(podType, cluster(c), j, base)
		o.ResourceVersion = fmt.Sprintf("%d-%s", i, o.ResourceVersion)
		mods = append(mods, o)
	}
	start := time.Now()
	for _, o := range mods {
		if !ix.Upsert(o) {
			b.Fatal("a modification was a no-op")
		}
	}
	modRate := float64(len(mods)) / time.Since(start).Seconds()
	b.Logf("modifications: %.0f changes/s", modRate)

	ns := []string{"ns-07"}
	if byApp {
		// The conjunction's namespace: ns-07 from 800 Pods per cluster
		// on.
		namespace, _ := graphqltest.Conjunction(perCluster)
		ns = []string{namespace}
	}
	// Issue 31's facets by a label of the Pods of one namespace, 1 % of
	// them from 1,000,000 on in either layout.
	facetsInNamespace := []scaleRead{
		{"facets/label-tier-in-namespace", func() int {
			return len(views.Facets(ix, planner.Filter{Namespaces: ns}, views.FacetBy{Key: views.FacetLabel, Label: "tier"}))
		}},
		{"facets/label-app-in-namespace", func() int {
			return len(views.Facets(ix, planner.Filter{Namespaces: ns}, views.FacetBy{Key: views.FacetLabel, Label: "app"}))
		}},
	}
	var queries []scaleRead
	if byApp {
		queries = append(conjunctionReads(b, ix, n), facetsInNamespace...)
	} else {
		queries = append(spreadReads(b, ix, n, ns), facetsInNamespace...)
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			if q.run() == 0 {
				b.Fatal("the query selects nothing")
			}
			lat := make([]time.Duration, 0, 1<<12)
			for b.Loop() {
				start := time.Now()
				q.run()
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Microsecond), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100])/float64(time.Microsecond), "p99-µs")
		})
	}
	// A parent benchmark's own metrics are not printed: report them in a
	// sub-benchmark of their own.
	b.Run("summary", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(heap, "heap-B/pod")
		b.ReportMetric(rssPerPod, "rss-B/pod")
		b.ReportMetric(float64(bodies)/float64(perCluster), "body-B/pod")
		b.ReportMetric(float64(n)/applying.Seconds(), "fill-pods/s")
		b.ReportMetric(modRate, "changes/s")
	})
	runtime.KeepAlive(ix)
}

// scaleRead is one of the reads BenchmarkIndexScale times; run returns
// what it found, so that a read that finds nothing fails.
type scaleRead struct {
	name string
	run  func() int
}

// readRSS returns the process's memory as the kernel accounts for it.
func readRSS(b *testing.B) procmem.Usage {
	u, err := procmem.Read()
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// conjunctionReads are issue 31's conjunction page on a fill laid out by
// app: a page of 50 and the count, read together as the GraphQL layer
// reads a page with its totalCount, of graphqltest.Conjunction (ns-07 and
// "app=app-7,tier=fe") over n Pods.
func conjunctionReads(b *testing.B, ix *index.Index, n int) []scaleRead {
	namespace, sel := graphqltest.Conjunction(n / scaleClusters)
	f := planner.Filter{Namespaces: []string{namespace}, Selector: indextest.MustSelector(b, sel)}
	app, _, _ := strings.Cut(sel, ",")
	b.Logf("conjunction %s in %s: %d matches; %s alone %d, tier=fe %d, %s %d, of %d Pods", sel, namespace, planner.Count(ix, f),
		app, planner.Count(ix, planner.Filter{Selector: indextest.MustSelector(b, app)}),
		planner.Count(ix, planner.Filter{Selector: indextest.MustSelector(b, "tier=fe")}),
		namespace, planner.Count(ix, planner.Filter{Namespaces: []string{namespace}}), n)
	return []scaleRead{
		{"page+count/conjunction", func() int {
			page, n := planner.ListCountUnion(ix, []planner.Filter{f}, nil, 50)
			return len(page.Objects) + n
		}},
	}
}

// spreadReads are the reads of the fill whose namespaces are spread
// (issue 16's), n Pods in all; ns is the namespace of those that read one.
func spreadReads(b *testing.B, ix *index.Index, n int, ns []string) []scaleRead {
	// The label selector app=x matches the Pods of one app across the
	// clusters: pick the app whose Pods are nearest 1 % of all (each of
	// graphqltest's 200 apps holds 0.5 % once a cluster has 20,000 Pods,
	// 1 % at 10,000).
	sel1 := onePercent(b, ix, n)
	return []scaleRead{
		{"page+count/labels-1pct", func() int {
			f := planner.Filter{Selector: sel1}
			return len(planner.List(ix, f, nil, 50).Objects) + planner.Count(ix, f)
		}},
		{"page+count/labels-1pct-and-tier", func() int {
			f := planner.Filter{Selector: indextest.MustSelector(b, sel1.String()+",tier=fe")}
			return len(planner.List(ix, f, nil, 50).Objects) + planner.Count(ix, f)
		}},
		{"page+count/namespace+tier", func() int {
			f := planner.Filter{Namespaces: ns, Selector: indextest.MustSelector(b, "tier=fe")}
			return len(planner.List(ix, f, nil, 50).Objects) + planner.Count(ix, f)
		}},
		{"page+count/indexed-phase=Failed", func() int {
			f := planner.Filter{Fields: indextest.MustFields(b, "status.phase=Failed")}
			return len(planner.List(ix, f, nil, 50).Objects) + planner.Count(ix, f)
		}},
		{"page+count/unindexed-phase!=Running-in-namespace", func() int {
			// graphqltest puts few Pods that are not Running in ns-07.
			f := planner.Filter{Namespaces: []string{"ns-04"}, Fields: indextest.MustFields(b, "status.phase!=Running")}
			return len(planner.List(ix, f, nil, 50).Objects) + planner.Count(ix, f)
		}},
		{"sort/created-desc", func() int {
			p, err := planner.ListSorted(ix, []planner.Filter{{}}, []planner.SortKey{{Path: fieldpath.MustParse("metadata.creationTimestamp"), Desc: true}}, nil, 50)
			if err != nil {
				b.Fatal(err)
			}
			return len(p.Objects)
		}},
		{"sort/unindexed-startTime-in-namespace", func() int {
			f := planner.Filter{Namespaces: ns}
			p, err := planner.ListSorted(ix, []planner.Filter{f}, []planner.SortKey{{Path: fieldpath.MustParse("status.startTime"), Desc: true}}, nil, 50)
			if err != nil {
				b.Fatal(err)
			}
			return len(p.Objects)
		}},
		{"facets/phase", func() int {
			return len(views.Facets(ix, planner.Filter{}, views.FacetBy{Key: views.FacetField, Field: fieldpath.MustParse("status.phase")}))
		}},
		{"facets/label-tier", func() int {
			return len(views.Facets(ix, planner.Filter{}, views.FacetBy{Key: views.FacetLabel, Label: "tier"}))
		}},
		{"facets/unindexed-qosClass-in-namespace", func() int {
			f := planner.Filter{Namespaces: ns}
			return len(views.Facets(ix, f, views.FacetBy{Key: views.FacetField, Field: fieldpath.MustParse("status.qosClass")}))
		}},
	}
}

// onePercent returns a selector on the label app whose value selects
// about 1 % of the n Pods.
func onePercent(b *testing.B, ix *index.Index, n int) labels.Selector {
	facets := views.Facets(ix, planner.Filter{}, views.FacetBy{Key: views.FacetLabel, Label: "app"})
	best := facets[0]
	for _, f := range facets {
		if abs(f.Count-n/100) < abs(best.Count-n/100) {
			best = f
		}
	}
	b.Logf("app=%s selects %d of %d Pods", best.Value, best.Count, n)
	return indextest.MustSelector(b, "app="+best.Value)
}

func abs(x int) int { return max(x, -x) }
