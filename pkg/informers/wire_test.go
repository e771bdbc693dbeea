package informers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/wire"
)

// requestLog records the URLs of the requests a cluster's config makes.
type requestLog struct {
	mu   sync.Mutex
	urls []string
	// held, while open, holds back every watch request (holdWatches).
	held    chan struct{}
	release func()
}

// holdWatches holds back every watch request made through l until
// releaseWatches (or the test's end), so that a test can look at what a
// fleet says before any watch has begun, however fast the member answers.
func (l *requestLog) holdWatches(t testing.TB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := make(chan struct{})
	l.held, l.release = held, sync.OnceFunc(func() { close(held) })
	t.Cleanup(l.release)
}

// releaseWatches lets the watches held back by holdWatches go on.
func (l *requestLog) releaseWatches() {
	l.mu.Lock()
	release := l.release
	l.mu.Unlock()
	release()
}

func (l *requestLog) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.urls = append(l.urls, r.URL.String())
			held := l.held
			l.mu.Unlock()
			if held != nil && r.URL.Query().Get("watch") == "true" {
				select {
				case <-held:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

// saw reports whether a request's URL contains every one of parts.
func (l *requestLog) saw(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, u := range l.urls {
		for _, p := range parts {
			if !strings.Contains(u, p) {
				continue next
			}
		}
		return true
	}
	return false
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wirePod is realistic Pod i as a Deployment would create it, from
// graphqltest.RealisticPod, without what the server sets, and its status;
// some carry the last-applied annotation alone, some beside another, and
// one an annotation of characters that JSON escapes.
func wirePod(t testing.TB, ns string, i int) (pod *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	o := graphqltest.RealisticPod(&object.Type{Kind: "Pod"}, "x", i, time.Now())
	var m map[string]any
	if err := json.Unmarshal(o.Raw(), &m); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	status, _ = m["status"].(map[string]any)
	delete(m, "status")
	u.SetNamespace(ns)
	u.SetUID("")
	u.SetResourceVersion("")
	u.SetCreationTimestamp(metav1.Time{})
	ann := u.GetAnnotations()
	switch i % 4 {
	case 0:
		ann = map[string]string{wire.LastApplied: `{"apiVersion":"v1","kind":"Pod"}`}
	case 1:
		ann[wire.LastApplied] = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + u.GetName() + `"}}`
	case 2:
		ann["note"] = "<b>\"quoted\" & tabbed\tline\nbreak é \u2028 ☃</b>"
	}
	u.SetAnnotations(ann)
	return u, status
}

// cutMember returns raw without the first member named key, wherever it
// is, its value's extent found by encoding/json: the oracle of the stored
// bytes, independent of package wire's scanner.
func cutMember(t testing.TB, raw []byte, key string) []byte {
	t.Helper()
	name := []byte(`"` + key + `":`)
	at := bytes.Index(raw, name)
	if at < 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw[at+len(name):]))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("member %s of %s: %v", key, raw, err)
	}
	end := at + len(name) + int(dec.InputOffset())
	switch {
	case raw[at-1] == ',':
		at--
	case raw[end] == ',':
		end++
	}
	return append(append([]byte{}, raw[:at]...), raw[end:]...)
}

// serverJSON returns the object at path as the server sends it, less
// managedFields and the last-applied annotation (and annotations left
// empty by it).
func serverJSON(t testing.TB, cs kubernetes.Interface, path string) []byte {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json").Do(t.Context()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.TrimSpace(raw)
	if !bytes.Contains(raw, []byte(`"managedFields":`)) {
		t.Fatalf("%s: the server sent no managedFields: the test would prove nothing", path)
	}
	raw = cutMember(t, raw, "managedFields")
	raw = cutMember(t, raw, wire.LastApplied)
	return bytes.Replace(raw, []byte(`,"annotations":{}`), nil, 1)
}

// TestStoredBytesAreTheServers checks what the informers store against
// what a real API server sends: realistic Pods (two containers, probes,
// volumes, owners, a status), created and given a status, are stored as
// the JSON a GET of each returns, byte for byte, less managedFields and
// the last-applied annotation, and their metadata as the typed Pod has
// it; after a change that arrives by the watch, again. It runs with
// streaming lists (Options.StreamingLists, client-go's WatchList) and
// without them (plain lists, the default), and checks from the requests
// which one ran.
func TestStoredBytesAreTheServers(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	cfg := c.AdminConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	dc := testcluster.Dynamic(t, cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns, count = "wire-bytes", 24
	testcluster.CreateNamespace(t, dc, ns)
	for i := range count {
		u, status := wirePod(t, ns, i)
		created, err := dc.Resource(pods).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Object["status"] = status
		if _, err := dc.Resource(pods).Namespace(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name      string
		streaming bool
		want      []string // in the URL of some request
	}{
		{"streaming list", true, []string{"/api/v1/pods?", "sendInitialEvents=true", "watch=true"}},
		{"plain list", false, []string{"/api/v1/pods?", "resourceVersion=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, true)
			opts := testOptions("pods")
			opts.StreamingLists = tc.streaming
			var log requestLog
			f := startFleet(t, index.Options{}, opts, clusters.Cluster{Name: "c1", Config: log.config(c.AdminConfig())})
			waitStatus(t, f, "c1", health.Synced)
			if !log.saw(tc.want...) {
				t.Errorf("no request with %q among %q", tc.want, log.urls)
			}
			if !tc.streaming && log.saw("sendInitialEvents=true") {
				t.Errorf("a streaming list without StreamingLists: %q", log.urls)
			}
			checkStored(t, f, cs, ns, count)

			// A change, which arrives by the watch.
			name := fmt.Sprintf("app-%d-%s-%05d", 0, "00000", 0)
			p, err := dc.Resource(pods).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			labels := p.GetLabels()
			labels["changed"] = tc.name[:5]
			p.SetLabels(labels)
			if p, err = dc.Resource(pods).Namespace(ns).Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			key := object.Key{Cluster: "c1", Resource: "pods", Namespace: ns, Name: name}
			testcluster.Eventually(t, 30*time.Second, "the change in the index", func() (bool, string) {
				o := f.index.Get(key)
				return o != nil && o.ResourceVersion == p.GetResourceVersion(), fmt.Sprintf("%v", o != nil)
			})
			checkStored(t, f, cs, ns, count)
		})
	}
}

// checkStored compares each of the namespace's Pods in the index with the
// server's JSON and typed Pod; most of them are stored compressed
// (testOptions), so this checks that they read back byte for byte.
func checkStored(t *testing.T, f *fleet, cs kubernetes.Interface, ns string, count int) {
	t.Helper()
	objs := f.index.Objects("c1", "pods")
	n, compressed := 0, 0
	qos := map[corev1.PodQOSClass]int{}
	for _, o := range objs {
		if o.Namespace != ns {
			continue
		}
		n++
		if o.Compressed() {
			compressed++
		}
		want := serverJSON(t, cs, "/api/v1/namespaces/"+ns+"/pods/"+o.Name)
		if !bytes.Equal(o.Raw(), want) {
			t.Errorf("%s: stored bytes differ from the server's less managedFields:\n%s", o.Name, cmp.Diff(string(want), string(o.Raw())))
			continue
		}
		var pod corev1.Pod
		if err := json.Unmarshal(want, &pod); err != nil {
			t.Fatal(err)
		}
		qos[pod.Status.QOSClass]++
		got := object.Meta{Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion, Labels: o.Labels, Owners: o.Owners, Created: o.Created()}
		wantMeta := object.Meta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion, Created: pod.CreationTimestamp.Time}
		for k, v := range pod.Labels {
			wantMeta.Labels = append(wantMeta.Labels, object.Label{Key: k, Value: v})
		}
		for _, r := range pod.OwnerReferences {
			wantMeta.Owners = append(wantMeta.Owners, object.OwnerRef{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID, Controller: r.Controller != nil && *r.Controller})
		}
		sortLabels(wantMeta.Labels)
		if diff := cmp.Diff(wantMeta, got); diff != "" {
			t.Errorf("%s: metadata (-server +stored):\n%s", o.Name, diff)
		}
	}
	if n != count {
		t.Errorf("%d Pods of %s in the index, want %d", n, ns, count)
	}
	if compressed < n/2 {
		t.Errorf("only %d of %d Pods are stored compressed: the comparison says little about compression", compressed, n)
	}
	// A path into status that no index holds is read from the status
	// part of each compressed body alone: it finds what the server says.
	for class, want := range qos {
		if class == "" {
			t.Fatal("a Pod without status.qosClass: the check says nothing")
		}
		filter := planner.Filter{Namespaces: []string{ns}, Fields: mustFields(t, "status.qosClass="+string(class))}
		if got := planner.Count(f.index, filter); got != want {
			t.Errorf("status.qosClass=%s selects %d Pods, the server has %d", class, got, want)
		}
	}
}

func sortLabels(ls object.Labels) {
	for i := range ls {
		for j := i + 1; j < len(ls); j++ {
			if ls[j].Key < ls[i].Key {
				ls[i], ls[j] = ls[j], ls[i]
			}
		}
	}
}

// TestPagedListStoresEveryObject lists more objects than one page holds
// from an API server without watch cache, which pages its lists (the
// reflector asks for 500 at a time): every object is stored, once, and a
// request carried a continue token.
func TestPagedListStoresEveryObject(t *testing.T) {
	e := noWatchCacheEnv(t)
	c := e.Cluster("c1")
	dc := testcluster.Dynamic(t, c.AdminConfig())
	const ns, count = "paged", 520
	testcluster.CreateNamespace(t, dc, ns)
	testcluster.Seed(t, dc, configMaps, count, func(i int) *unstructured.Unstructured {
		return configMap(ns, fmt.Sprintf("cm-%03d", i), map[string]any{"i": fmt.Sprint(i)})
	})
	var log requestLog
	f := startFleet(t, index.Options{}, testOptions("configmaps"), clusters.Cluster{Name: "c1", Config: log.config(c.AdminConfig())})
	waitStatus(t, f, "c1", health.Synced)
	if !log.saw("/api/v1/configmaps?", "continue=") {
		t.Errorf("no request with a continue token among %q", log.urls)
	}
	seen := map[string]bool{}
	for _, o := range f.index.Objects("c1", "configmaps") {
		if o.Namespace == ns {
			seen[o.Name] = true
			if !bytes.HasPrefix(o.Raw(), []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"`+o.Name+`"`)) {
				t.Errorf("%s: stored %s", o.Name, o.Raw())
			}
		}
	}
	if len(seen) != count {
		t.Errorf("%d ConfigMaps of %s stored, want %d", len(seen), ns, count)
	}
}
