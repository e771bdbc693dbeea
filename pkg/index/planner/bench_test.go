package planner_test

import (
	"fmt"
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
	"runtime"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

var svcType = &object.Type{Resource: "services", GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service", Namespaced: true}

// benchRaw is the JSON of the benchmark objects without containers, shared:
// sharing keeps a million-object fixture small.
var benchRaw = []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{}}`)

// benchTeams name the image repositories of the benchmark fleet's
// namespaces, one in ten namespaces each.
var benchTeams = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}

// benchImageRaw returns the JSON of an app's Pods (and, for search, of its
// ReplicaSet and Deployment): one container whose image names the team of
// the namespace and the app, e.g. registry.example.com/bravo/web-3:1.3.
func benchImageRaw(nsi, app int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{},"spec":{"containers":[{"name":"app","image":"registry.example.com/%s/web-%d:1.%d"}]}}`,
		benchTeams[nsi%len(benchTeams)], app, app%10)
}

// benchPodRaws caches the JSON of the benchmark Pods: Pods of the same team,
// app and replica share it, which keeps a million-Pod fixture small.
var benchPodRaws = map[[3]int][]byte{}

// benchPhases are the benchmark Pods' phases: 1 in 100 Failed, 2 Pending,
// 2 Succeeded, the rest Running.
func benchPhase(h uint32) string {
	switch h % 100 {
	case 0:
		return "Failed"
	case 1, 2:
		return "Pending"
	case 3, 4:
		return "Succeeded"
	}
	return "Running"
}

// benchPodRaw returns the JSON of replica p of an app's Pods, about 1.6 KB
// with the image of benchImageRaw: metadata with managed fields, a
// container with resources and probes, a node of 20, and a status whose
// phase (benchPhase) status.phaseMirror repeats, so that a selector on that
// unindexed path selects what one on the indexed status.phase does.
func benchPodRaw(nsi, app, p int) []byte {
	key := [3]int{nsi % len(benchTeams), app, p}
	if raw := benchPodRaws[key]; raw != nil {
		return raw
	}
	phase := benchPhase(uint32(key[0]*1000003+app*8+p) * 2654435761 >> 8)
	raw := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"managedFields":[{"manager":"kube-controller-manager","operation":"Update",`+
		`"apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},`+
		`"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{"uid":"0"}":{}}},"f:spec":{"f:containers":{"k:{"name":"app"}":`+
		`{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{},"f:resources":{},"f:terminationMessagePath":{}}},"f:dnsPolicy":{},`+
		`"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},`+
		`{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:05Z","fieldsType":"FieldsV1","subresource":"status",`+
		`"fieldsV1":{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}}}]},`+
		`"spec":{"containers":[{"name":"app","image":"registry.example.com/%s/web-%d:1.%d","ports":[{"containerPort":8080,"protocol":"TCP"}],`+
		`"resources":{"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},`+
		`"livenessProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":10},"imagePullPolicy":"IfNotPresent"}],`+
		`"restartPolicy":"Always","dnsPolicy":"ClusterFirst","serviceAccountName":"default","nodeName":"node-%02d","schedulerName":"default-scheduler"},`+
		`"status":{"phase":%q,"phaseMirror":%q,"conditions":[{"type":"Ready","status":"True"}],"hostIP":"10.0.0.%d","qosClass":"Burstable"}}`,
		benchTeams[key[0]], app, app%10, (app*8+p)%20, phase, phase, (app*8+p)%20)
	benchPodRaws[key] = raw
	return raw
}

// benchFleet returns about n objects shaped like real clusters: 10 clusters
// of 50 namespaces; in each namespace, apps web-0, web-1, … of 12 objects
// each: a Deployment, its ReplicaSet, 8 Pods owned by the ReplicaSet, a
// Service and a ConfigMap. Objects carry app, tier and (ReplicaSets and
// Pods) pod-template-hash labels; the objects of one app share their label
// and owner slices, as they would after interning, and the workloads'
// JSON, which names their image (benchImageRaw). Pods have a phase and a
// node besides (benchPodRaw).
func benchFleet(n int) []*object.Object {
	const clusters, namespaces, perApp = 10, 50, 12
	perNamespace := max(n/(clusters*namespaces), perApp)
	tiers := []string{"fe", "be", "db"}
	out := make([]*object.Object, 0, n)
	uid := 0
	newObj := func(cluster string, t *object.Type, ns, name string, ls object.Labels, owners []object.OwnerRef, raw []byte) *object.Object {
		uid++
		o := &object.Object{Cluster: cluster, Type: t, Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("u%d", uid)),
			ResourceVersion: "1", Labels: ls, Owners: owners}
		o.SetRaw(raw)
		out = append(out, o)
		return o
	}
	for c := range clusters {
		cluster := fmt.Sprintf("cluster-%02d", c)
		for nsi := range namespaces {
			ns := fmt.Sprintf("ns-%02d", nsi)
			for app := 0; app*perApp < perNamespace; app++ {
				name := fmt.Sprintf("web-%d", app)
				hash := fmt.Sprintf("%08x", uint32(c*1000003+nsi*10007+app)*2654435761)
				appLabels := object.Labels{{Key: "app", Value: name}, {Key: "tier", Value: tiers[app%3]}}
				podLabels := object.Labels{{Key: "app", Value: name}, {Key: "pod-template-hash", Value: hash}, {Key: "tier", Value: tiers[app%3]}}
				raw := benchImageRaw(nsi, app)
				d := newObj(cluster, indextest.DeploymentType, ns, name, appLabels, nil, raw)
				rs := newObj(cluster, indextest.ReplicaSetType, ns, name+"-"+hash, podLabels, []object.OwnerRef{{Kind: "Deployment", Name: name, UID: d.UID, Controller: true}}, raw)
				owners := []object.OwnerRef{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: true}}
				for p := range perApp - 4 {
					newObj(cluster, indextest.PodType, ns, fmt.Sprintf("%s-%d", rs.Name, p), podLabels, owners, benchPodRaw(nsi, app, p))
				}
				newObj(cluster, svcType, ns, name, appLabels, nil, benchRaw)
				newObj(cluster, indextest.ConfigMapType, ns, name, appLabels[:1], nil, benchRaw)
			}
		}
	}
	return out
}

func newBenchIndex(objs []*object.Object, opts index.Options) *index.Index {
	ix := index.New(opts)
	for _, o := range objs {
		ix.Upsert(o)
	}
	return ix
}

// benchIndexes are the settings of Options.Indexes the write and memory
// benchmarks compare: the defaults, and no index on paths.
var benchIndexes = []struct {
	name string
	opts index.Options
}{{"default", index.Options{}}, {"off", indextest.Unindexed()}}

// BenchmarkApply measures Upsert of modified objects (new
// ResourceVersion, same labels) into an index of 100000 objects, with the
// default indexes on paths and without.
func BenchmarkApply(b *testing.B) {
	for _, bi := range benchIndexes {
		b.Run("objects=100000/indexes="+bi.name, func(b *testing.B) { benchApply(b, bi.opts) })
	}
}

func benchApply(b *testing.B, opts index.Options) {
	{
		objs := benchFleet(100000)
		ix := newBenchIndex(objs, opts)
		mods := make([]*object.Object, len(objs))
		for i, o := range objs {
			mods[i] = indextest.Modified(o, "2")
		}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			i := n % len(objs)
			o := mods[i]
			if n/len(objs)%2 == 1 {
				o = objs[i]
			}
			if !ix.Upsert(o) {
				b.Fatal("Upsert was a no-op")
			}
			n++
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "changes/s")
	}
}

// BenchmarkListPage measures a page of 50 of a narrow query, one namespace
// and a label selector, across the fleet: the first page, and a page from a
// cursor in the middle of the matches.
func BenchmarkListPage(b *testing.B) {
	for _, size := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			ix := newBenchIndex(benchFleet(size), index.Options{})
			runtime.GC()
			sel, err := labels.Parse("app=web-3,tier in (fe,be)")
			if err != nil {
				b.Fatal(err)
			}
			f := planner.Filter{Namespaces: []string{"ns-07"}, Selector: sel}
			all := planner.List(ix, f, nil, 0).Objects
			if len(all) < 100 {
				b.Fatalf("only %d matches", len(all))
			}
			mid := all[len(all)/2].Position()
			for _, bc := range []struct {
				name  string
				after *object.Position
			}{{"page=first", nil}, {"page=middle", &mid}} {
				b.Run(bc.name, func(b *testing.B) {
					b.ReportAllocs()
					lat := make([]time.Duration, 0, 1<<16)
					for b.Loop() {
						start := time.Now()
						page := planner.List(ix, f, bc.after, 50)
						lat = append(lat, time.Since(start))
						if len(page.Objects) != 50 {
							b.Fatalf("page of %d", len(page.Objects))
						}
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Microsecond), "p50-µs")
				})
			}
		})
	}
}

// BenchmarkMemoryPerObject reports the heap the index adds per object, all
// postings and counts included ("index-B/object"): the live heap after GC
// with the objects alone, then with the objects in an index. The objects
// (and their Raw bytes) are allocated before the first measurement. The
// feed is kept to one event so as to measure the per-object cost; at the
// default retention it adds a fixed 32 B per retained event. The timed loop
// measures Get.
func BenchmarkMemoryPerObject(b *testing.B) {
	for _, size := range []int{100000, 1000000} {
		for _, bi := range benchIndexes {
			b.Run(fmt.Sprintf("objects=%d/indexes=%s", size, bi.name), func(b *testing.B) { benchMemory(b, size, bi.opts) })
		}
	}
}

func benchMemory(b *testing.B, size int, opts index.Options) {
	{
		{
			objs := benchFleet(size)
			before := liveHeap()
			opts.Retention = 1
			ix := newBenchIndex(objs, opts)
			perObject := float64(liveHeap()-before) / float64(len(objs))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if ix.Get(objs[n*7919%len(objs)].Key()) == nil {
					b.Fatal("missing object")
				}
				n++
			}
			// After the loop: b.Loop's first call clears reported metrics.
			b.ReportMetric(perObject, "index-B/object")
			runtime.KeepAlive(objs)
		}
	}
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkSearch measures searches for one word across the fleet: an
// image repository's team (a tenth of the workloads), a page of 50 and the
// count; and a word that begins many tokens (every pod-template-hash that
// starts with "a", merged before the page is read). It reports the token
// index's size.
func BenchmarkSearch(b *testing.B) {
	for _, size := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			ix := newBenchIndex(benchFleet(size), index.Options{})
			runtime.GC()
			for _, bc := range []struct{ name, search string }{
				{"word=image", "bravo"},
				{"word=image,namespace", "bravo ns 01"},
				{"word=prefix-of-many", "a"},
			} {
				q, err := search.Parse(bc.search)
				if err != nil {
					b.Fatal(err)
				}
				f := planner.Filter{Search: q}
				b.Run(bc.name+"/page=first", func(b *testing.B) {
					b.ReportAllocs()
					lat := make([]time.Duration, 0, 1<<16)
					for b.Loop() {
						start := time.Now()
						page := planner.List(ix, f, nil, 50)
						lat = append(lat, time.Since(start))
						if len(page.Objects) == 0 {
							b.Fatal("nothing found")
						}
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Microsecond), "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100])/float64(time.Microsecond), "p99-µs")
				})
				b.Run(bc.name+"/count", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if planner.Count(ix, f) == 0 {
							b.Fatal("nothing found")
						}
					}
				})
			}
			tokens := 0
			ix.Read(func(r index.Reader) {
				r.EachToken("", func(*index.Posting) bool { tokens++; return true })
			})
			b.ReportMetric(float64(tokens), "tokens")
		})
	}
}

// BenchmarkFieldSelector measures issue 15's field selector queries on the
// benchmark fleet's Pods, each as a GraphQL request with totalCount asks
// them: a page of 50 and the count, on the indexed status.phase and on
// status.phaseMirror, which holds the same values without an index
// (benchPodRaw); in one namespace across the clusters, and across the
// fleet. Then facets by each path, of all Pods and of one namespace. It
// reports the latencies' p50 and p99 and the objects visited per
// operation.
func BenchmarkFieldSelector(b *testing.B) {
	for _, size := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			ix := newBenchIndex(benchFleet(size), index.Options{})
			runtime.GC()
			pods := []string{"Pod"}
			ns := []string{"ns-07"}
			measure := func(b *testing.B, op func() int) {
				if op() == 0 {
					b.Fatal("nothing selected")
				}
				b.ReportAllocs()
				lat := make([]time.Duration, 0, 1<<16)
				before := ix.Scanned()
				for b.Loop() {
					start := time.Now()
					op()
					lat = append(lat, time.Since(start))
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Microsecond), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100])/float64(time.Microsecond), "p99-µs")
				b.ReportMetric(float64(ix.Scanned()-before)/float64(len(lat)), "visited/op")
			}
			for _, path := range []string{"status.phase", "status.phaseMirror"} {
				name := map[string]string{"status.phase": "indexed", "status.phaseMirror": "unindexed"}[path]
				sel := indextest.MustFields(b, path+"=Failed")
				for _, q := range []struct {
					name string
					f    planner.Filter
				}{
					{"namespace", planner.Filter{Kinds: pods, Namespaces: ns, Fields: sel}},
					{"fleet", planner.Filter{Kinds: pods, Fields: sel}},
				} {
					b.Run(fmt.Sprintf("path=%s/%s/page+count", name, q.name), func(b *testing.B) {
						measure(b, func() int { return len(planner.List(ix, q.f, nil, 50).Objects) + planner.Count(ix, q.f) })
					})
				}
				by := views.FacetBy{Key: views.FacetField, Field: fieldpath.MustParse(path)}
				for _, q := range []struct {
					name string
					f    planner.Filter
				}{
					{"pods", planner.Filter{Kinds: pods}},
					{"namespace", planner.Filter{Kinds: pods, Namespaces: ns}},
				} {
					b.Run(fmt.Sprintf("path=%s/facets/%s", name, q.name), func(b *testing.B) {
						measure(b, func() int { return len(views.Facets(ix, q.f, by)) })
					})
				}
			}
		})
	}
}
