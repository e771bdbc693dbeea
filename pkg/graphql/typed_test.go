package graphql

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/graphql-go/graphql/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/index/object"

	"github.com/fleetcache/fleetcache/pkg/openapi"
)

// staticKinds serves one snapshot of kinds, which never changes.
type staticKinds struct{ snap *openapi.Snapshot }

func (k staticKinds) Snapshot() (*openapi.Snapshot, uint64) { return k.snap, 1 }
func (k staticKinds) Watch() (uint64, <-chan struct{})      { return 1, nil }

// podKinds returns Kinds that type Pods with the schema a 1.36 API server
// serves (pkg/graphql/typed/testdata: the components its Pod reaches, of
// its /openapi/v3/api/v1 document).
func podKinds(t testing.TB) Kinds {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("typed", "testdata", "pod-openapi-v1.36.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Decode("/openapi/v3/api/v1?hash=test", raw)
	if err != nil {
		t.Fatal(err)
	}
	return staticKinds{&openapi.Snapshot{Kinds: []openapi.Kind{{Kind: "Pod", Resource: "pods", Namespaced: true,
		Versions: []openapi.Served{{Version: "v1", Doc: doc, Schema: "io.k8s.api.core.v1.Pod", Clusters: []string{"c1"}}}}}}}
}

// processCPU returns the CPU time the process has used, in nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// The same ten values of a page of 50 Pods, typed and through
// field(path:).
const (
	typedTen = `{ pods(first: 50) { edges { node { cluster namespace name
		metadata { uid resourceVersion }
		spec { nodeName serviceAccountName containers { image } }
		status { phase podIP hostIP containerStatuses { restartCount ready } } } } } }`
	fieldTen = `{ pods(first: 50) { edges { node { cluster namespace name
		uid: field(path: "metadata.uid") rv: field(path: "metadata.resourceVersion")
		node: field(path: "spec.nodeName") sa: field(path: "spec.serviceAccountName") images: field(path: "spec.containers[].image")
		phase: field(path: "status.phase") podIP: field(path: "status.podIP") hostIP: field(path: "status.hostIP")
		restarts: field(path: "status.containerStatuses[].restartCount") ready: field(path: "status.containerStatuses[].ready") } } } }`
)

// BenchmarkTypedFields queries a page of 50 Pods (benchPod, 3 KB) for ten
// nested values, typed and through field(path:): issue 33 asks that the
// typed page cost at most 1.2 times the other. The Pods are stored as the
// informers store them: compressed, the indexed paths' values kept beside
// the body. The sides alternate over three rounds.
func BenchmarkTypedFields(b *testing.B) {
	const page = 50
	s := newServer(b, benchPodIndex(b, page), newFixture(b).tracker, Options{Kinds: podKinds(b)})
	queries := map[string]string{"typed": typedTen, "field": fieldTen}
	sides := []string{"typed", "field"}
	for round := range 3 {
		for k := range sides {
			side := sides[(round+k)%len(sides)]
			b.Run(fmt.Sprintf("pods=%d/fields=10/%s/round=%d", page, side, round), func(b *testing.B) {
				var objects int
				cpu := processCPU(b)
				for b.Loop() {
					if res := s.Execute(b.Context(), Request{Query: queries[side]}); len(res.Errors) > 0 {
						b.Fatal(res.Errors)
					}
					objects += page
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(objects), "ns/pod")
				// The process's CPU time (the collector's included) is
				// steadier than the time on a machine others share.
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(objects), "cpu-ns/pod")
			})
		}
	}
}

// TestTypedExecution runs typed queries both ways, with the executor and
// with graphql-go's, and checks that a typed page holds the values
// field(path:) reads.
func TestTypedExecution(t *testing.T) {
	s := newServer(t, benchPodIndex(t, 5), newFixture(t).tracker, Options{Kinds: podKinds(t)})
	for _, query := range []string{
		typedTen,
		`{ pods(first: 2, filter: {namespaces: ["web"]}, sort: [{field: "metadata.name", order: DESC}]) { totalCount revision staleClusters
			edges { cursor node { __typename name labels metadata { labels ownerReferences { kind name controller } }
			spec { containers { name ports { containerPort protocol } livenessProbe { httpGet { port path } } resources { limits requests } env { name value } } }
			status { conditions { type status } } } } pageInfo { hasNextPage endCursor } } }`,
		`{ resources(first: 3) { edges { node { __typename name ... on Pod { spec { nodeName tolerations { key tolerationSeconds } } } } } } }`,
		`{ resource(cluster: "c1", kind: "Pod", namespace: "web", name: "web-7d9f8c6b5-00001") { __typename ... on Pod { status { phase } owners { name } } } }`,
	} {
		got := s.Execute(t.Context(), Request{Query: query})
		if len(got.Errors) > 0 {
			t.Fatalf("%s: %s", query, mustJSON(t, got))
		}
		want := executeWithGraphQLGo(t, s, query, nil, "")
		if diff := cmp.Diff(jsonTokens(t, comparable(t, want)), jsonTokens(t, comparable(t, got))); diff != "" {
			t.Errorf("%s: the executor differs from graphql-go (-graphql-go +executor):\n%s", query, diff)
		}
	}
	// The same ten values, typed and through field(path:).
	var typed, fields struct {
		Pods struct {
			Edges []struct {
				Node struct {
					Metadata struct{ UID, ResourceVersion string }
					Spec     struct {
						NodeName, ServiceAccountName string
						Containers                   []struct{ Image string }
					}
					Status struct {
						Phase, PodIP, HostIP string
						ContainerStatuses    []struct {
							RestartCount int
							Ready        bool
						}
					}
					UID, RV, Node, SA, Phase, PodIP, HostIP string
					Images                                  []string
					Restarts                                []int
					Ready                                   []bool
				}
			}
		}
	}
	decodeResult(t, s.Execute(t.Context(), Request{Query: typedTen}), typedTen, &typed)
	decodeResult(t, s.Execute(t.Context(), Request{Query: fieldTen}), fieldTen, &fields)
	if len(typed.Pods.Edges) != 5 {
		t.Fatalf("%d Pods, want 5", len(typed.Pods.Edges))
	}
	for i, e := range typed.Pods.Edges {
		n, f := e.Node, fields.Pods.Edges[i].Node
		var images, restarts, ready []any
		for _, c := range n.Spec.Containers {
			images = append(images, c.Image)
		}
		for _, c := range n.Status.ContainerStatuses {
			restarts, ready = append(restarts, c.RestartCount), append(ready, c.Ready)
		}
		gotVals := []any{n.Metadata.UID, n.Metadata.ResourceVersion, n.Spec.NodeName, n.Spec.ServiceAccountName, images,
			n.Status.Phase, n.Status.PodIP, n.Status.HostIP, restarts, ready}
		wantVals := []any{f.UID, f.RV, f.Node, f.SA, anys(f.Images), f.Phase, f.PodIP, f.HostIP, anys(f.Restarts), anys(f.Ready)}
		if diff := cmp.Diff(wantVals, gotVals); diff != "" || f.Node == "" || f.Phase == "" {
			t.Errorf("Pod %d: typed values differ from field(path:)'s (-field +typed):\n%s", i, diff)
		}
	}
}

func anys[T any](s []T) []any {
	var out []any
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// kindDoc returns a kind of the core group whose schema has the given
// properties (OpenAPI v3 JSON), served by c1.
func kindDoc(t testing.TB, kind, resource, props string) openapi.Kind {
	t.Helper()
	raw := `{"components":{"schemas":{"k":{"type":"object","x-kubernetes-group-version-kind":[{"group":"","version":"v1","kind":"` +
		kind + `"}],"properties":{` + props + `}}}}}`
	doc, err := openapi.Decode("/openapi/v3/api/v1?hash="+kind, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return openapi.Kind{Kind: kind, Resource: resource, Versions: []openapi.Served{{Version: "v1", Doc: doc, Schema: "k", Clusters: []string{"c1"}}}}
}

// TestRelationsUnderRights checks Service.pods, Node.pods and Pod.node
// over benchPods (app=web, on node-0 to node-4), under each caller's
// rights: related objects the caller may not list are not there.
func TestRelationsUnderRights(t *testing.T) {
	ix := benchPodIndex(t, 5)
	mk := func(typ *object.Type, namespace, name, body string) {
		var u unstructured.Unstructured
		raw := `{"apiVersion":"v1","kind":"` + typ.Kind + `","metadata":{"name":"` + name + `","namespace":"` + namespace + `","uid":"u-` + name + `"}` + body + `}`
		if err := u.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		o, err := object.NewObject("c1", typ, &u)
		if err != nil {
			t.Fatal(err)
		}
		ix.Upsert(o)
	}
	svcType := &object.Type{Resource: "services", GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service", Namespaced: true}
	nodeType := &object.Type{Resource: "nodes", GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node"}
	mk(svcType, "web", "web", `,"spec":{"selector":{"app":"web"}}`)
	mk(svcType, "web", "other", `,"spec":{"selector":{"app":"other"}}`)
	mk(svcType, "web", "headless", `,"spec":{}`)
	mk(nodeType, "", "node-1", "")
	pods := podKinds(t).(staticKinds).snap.Kinds[0]
	kinds := staticKinds{&openapi.Snapshot{Kinds: []openapi.Kind{
		kindDoc(t, "Node", "nodes", `"spec":{"type":"object","properties":{"unschedulable":{"type":"boolean"}}}`),
		pods,
		kindDoc(t, "Service", "services", `"spec":{"type":"object","properties":{"selector":{"type":"object","additionalProperties":{"type":"string"}}}}`),
	}}}
	s := newServer(t, ix, newFixture(t).tracker, Options{Kinds: kinds, Authorizer: scopesAuthorizer{}})
	const query = `{
		services(first: 10) { edges { node { name ... on Service { pods(first: 10) { totalCount edges { node { name } } } } } } }
		nodes(first: 10) { edges { node { name ... on Node { pods(first: 10) { totalCount } } } } }
		pods(sort: [{field: "metadata.name"}]) { edges { node { name node { name } } } }
	}`
	for _, tc := range []struct {
		scopes []string
		want   string
	}{
		{[]string{"services"}, `{"services":{"edges":[` +
			`{"node":{"name":"headless","pods":{"totalCount":0,"edges":[]}}},{"node":{"name":"other","pods":{"totalCount":0,"edges":[]}}},` +
			`{"node":{"name":"web","pods":{"totalCount":0,"edges":[]}}}]},"nodes":{"edges":[]},"pods":{"edges":[]}}`},
		{[]string{"services", "pods", "nodes"}, `{"services":{"edges":[` +
			`{"node":{"name":"headless","pods":{"totalCount":0,"edges":[]}}},{"node":{"name":"other","pods":{"totalCount":0,"edges":[]}}},` +
			`{"node":{"name":"web","pods":{"totalCount":5,"edges":[{"node":{"name":"web-7d9f8c6b5-00000"}},{"node":{"name":"web-7d9f8c6b5-00001"}},` +
			`{"node":{"name":"web-7d9f8c6b5-00002"}},{"node":{"name":"web-7d9f8c6b5-00003"}},{"node":{"name":"web-7d9f8c6b5-00004"}}]}}}]},` +
			`"nodes":{"edges":[{"node":{"name":"node-1","pods":{"totalCount":1}}}]},` +
			`"pods":{"edges":[{"node":{"name":"web-7d9f8c6b5-00000","node":null}},{"node":{"name":"web-7d9f8c6b5-00001","node":{"name":"node-1"}}},` +
			`{"node":{"name":"web-7d9f8c6b5-00002","node":null}},{"node":{"name":"web-7d9f8c6b5-00003","node":null}},{"node":{"name":"web-7d9f8c6b5-00004","node":null}}]}}`},
		{[]string{"pods"}, `{"services":{"edges":[]},"nodes":{"edges":[]},"pods":{"edges":[` +
			`{"node":{"name":"web-7d9f8c6b5-00000","node":null}},{"node":{"name":"web-7d9f8c6b5-00001","node":null}},{"node":{"name":"web-7d9f8c6b5-00002","node":null}},` +
			`{"node":{"name":"web-7d9f8c6b5-00003","node":null}},{"node":{"name":"web-7d9f8c6b5-00004","node":null}}]}}`},
	} {
		u := &authn.User{Name: "alice", Extra: map[string][]string{"scopes": tc.scopes}}
		res := s.Execute(authn.WithUser(t.Context(), u), Request{Query: query})
		if len(res.Errors) > 0 {
			t.Fatalf("%v: %s", tc.scopes, mustJSON(t, res))
		}
		got, _ := json.Marshal(res.Data)
		if diff := cmp.Diff(tc.want, string(got)); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.scopes, diff)
		}
	}
}

// crdKinds returns n custom kinds, each a CRD's schema of a typical size:
// a spec of a dozen fields (a nested object, a list of objects, a map, an
// int-or-string), a status with conditions.
func crdKinds(t testing.TB, n int) []openapi.Kind {
	t.Helper()
	const schemaJSON = `{"type":"object","x-kubernetes-group-version-kind":[{"group":"$G","version":"v1","kind":"$K"}],"properties":{
"spec":{"type":"object","description":"The desired state.","properties":{
 "replicas":{"type":"integer","format":"int32","description":"How many."},"image":{"type":"string"},"paused":{"type":"boolean"},
 "port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
 "labels":{"type":"object","additionalProperties":{"type":"string"}},"mode":{"type":"string","enum":["Fast","Safe"]},
 "ratio":{"type":"number"},"timeoutSeconds":{"type":"integer","format":"int64"},
 "template":{"type":"object","properties":{"name":{"type":"string"},"config":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
 "targets":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"weight":{"type":"integer","format":"int32"},
   "selector":{"type":"object","properties":{"matchLabels":{"type":"object","additionalProperties":{"type":"string"}}}}}}},
 "tags":{"type":"array","items":{"type":"string"}}}},
"status":{"type":"object","properties":{"observedGeneration":{"type":"integer","format":"int64"},"phase":{"type":"string"},
 "conditions":{"type":"array","items":{"type":"object","properties":{"type":{"type":"string"},"status":{"type":"string"},
   "reason":{"type":"string"},"message":{"type":"string"},"lastTransitionTime":{"type":"string","format":"date-time"}}}}}}}}`
	out := make([]openapi.Kind, n)
	for i := range out {
		group, kind := fmt.Sprintf("g%03d.example.com", i), fmt.Sprintf("Thing%03d", i)
		raw := `{"components":{"schemas":{"k":` + strings.NewReplacer("$G", group, "$K", kind).Replace(schemaJSON) + `}}}`
		doc, err := openapi.Decode("/openapi/v3/apis/"+group+"/v1?hash=x", []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = openapi.Kind{Group: group, Kind: kind, Resource: strings.ToLower(kind) + "s." + group, Namespaced: true,
			Versions: []openapi.Served{{Version: "v1", Doc: doc, Schema: "k", Clusters: []string{"c1"}}}}
	}
	return out
}

// BenchmarkSchemaWith200CRDs measures the schema's build (what a change
// of the fleet's kinds costs: typed.Build and graphql-go's schema) and
// the size of its introspection (graphql-js' introspection query), with
// a Pod and 200 CRDs.
func BenchmarkSchemaWith200CRDs(b *testing.B) {
	kinds := append(crdKinds(b, 200), podKinds(b).(staticKinds).snap.Kinds...)
	s := newServer(b, newFixture(b).ix, newFixture(b).tracker, Options{Kinds: staticKinds{&openapi.Snapshot{Kinds: kinds}}})
	for b.Loop() {
		if _, err := s.newSchema(&openapi.Snapshot{Kinds: kinds}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/build")
	res := s.Execute(b.Context(), Request{Query: testutil.IntrospectionQuery})
	if len(res.Errors) > 0 {
		b.Fatal(res.Errors)
	}
	enc, err := json.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(enc)), "introspection-bytes")
	b.ReportMetric(float64(len(s.gen.Load().schema.TypeMap())), "types")
}

// changingKinds are Kinds whose snapshot the test replaces.
type changingKinds struct {
	mu      sync.Mutex
	snap    *openapi.Snapshot
	version uint64
	changed chan struct{}
}

func (k *changingKinds) Snapshot() (*openapi.Snapshot, uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.snap, k.version
}

func (k *changingKinds) Watch() (uint64, <-chan struct{}) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.version, k.changed
}

func (k *changingKinds) set(snap *openapi.Snapshot) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.snap, k.version = snap, k.version+1
	close(k.changed)
	k.changed = make(chan struct{})
}

// TestSchemaFollowsKinds changes the kinds while the server runs: the
// schema follows (a kind's root field valid once it came, invalid once it
// left), and a subscription started before goes on throughout.
func TestSchemaFollowsKinds(t *testing.T) {
	ix := benchPodIndex(t, 2)
	kinds := &changingKinds{snap: podKinds(t).(staticKinds).snap, changed: make(chan struct{})}
	s := startServer(t, ix, newFixture(t).tracker, Options{Kinds: kinds})
	sub, res := s.Subscribe(t.Context(), Request{Query: `subscription { resourceEvents { type resource { name ... on Pod { status { phase } } } } }`})
	if sub == nil {
		t.Fatalf("Subscribe: %s", mustJSON(t, res))
	}
	t.Cleanup(sub.Close)
	valid := func() bool { return len(s.Execute(t.Context(), Request{Query: `{ pods { totalCount } }`}).Errors) == 0 }
	if !valid() {
		t.Fatal("pods is not valid with Pods typed")
	}
	kinds.set(&openapi.Snapshot{})
	waitFor(t, "pods out of the schema", func() bool { return !valid() })
	kinds.set(podKinds(t).(staticKinds).snap)
	waitFor(t, "pods in the schema again", valid)
	// The subscription runs on with the plan of the schema it started
	// with, through two changes: its Pods are typed as they were.
	ix.Upsert(newBenchPodsOf(t, podType, 3)[2])
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ev, err := sub.Next(ctx)
	if err != nil || len(ev.Errors) > 0 || !strings.Contains(string(mustJSON(t, ev)), `"name":"web-7d9f8c6b5-00002","status":{"phase":"Running"}`) {
		t.Fatalf("event after the schema changed: %v %s", err, mustJSON(t, ev))
	}
}
