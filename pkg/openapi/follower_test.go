package openapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// widgetDoc is a group-version's document with a kind Widget.
const widgetDoc = `{"openapi":"3.0.0","components":{"schemas":{
"com.example.v1.Widget":{"type":"object","x-kubernetes-group-version-kind":[{"group":"example.com","version":"v1","kind":"Widget"}],
  "properties":{"spec":{"type":"object"}}},
"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent":{"type":"object","x-kubernetes-group-version-kind":[{"group":"example.com","version":"v1","kind":"WatchEvent"}]},
"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":{"type":"object"}}}}`

func TestDecode(t *testing.T) {
	d, err := Decode("/openapi/v3/apis/example.com/v1?hash=A", []byte(widgetDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"example.com/v1/Widget": "com.example.v1.Widget", "example.com/v1/WatchEvent": "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"}
	if diff := cmp.Diff(want, d.kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if d.Resolve("#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta") == nil || d.Resolve("ObjectMeta") != nil {
		t.Error("Resolve resolves what it should not, or not what it should")
	}
	if _, err := Decode("/x", []byte(`{"components":`)); err == nil {
		t.Error("a truncated document decoded")
	}
}

// TestSnapshot checks how the clusters' kinds make the fleet's: versions
// grouped by document, clusters sorted, a change signalled when the kinds,
// versions or documents change (not for a cluster that serves what others
// do), a removed cluster's kinds gone.
func TestSnapshot(t *testing.T) {
	f := New(Options{})
	v1, _ := Decode("/openapi/v3/apis/example.com/v1?hash=A", []byte(widgetDoc))
	v1b, _ := Decode("/openapi/v3/apis/example.com/v1?hash=B", []byte(widgetDoc))
	widget := kindKey{"example.com", "Widget"}
	at := func(doc *Document) map[kindKey]clusterKind {
		return map[kindKey]clusterKind{widget: {version: "v1", resource: "widgets.example.com", namespaced: true, doc: doc, schema: "com.example.v1.Widget"}}
	}
	version, changed := f.Watch()
	f.set("c2", at(v1))
	select {
	case <-changed:
	default:
		t.Fatal("no change signalled")
	}
	_, changed = f.Watch()
	f.set("c1", at(v1)) // what c2 serves: nothing changes in the schema
	f.set("c1", at(v1)) // the same again
	select {
	case <-changed:
		t.Fatal("a change signalled for a cluster that serves what another does")
	default:
	}
	f.set("c3", at(v1b)) // another document of v1
	select {
	case <-changed:
	default:
		t.Fatal("no change signalled for another document")
	}
	snap, v := f.Snapshot()
	if v != version+2 {
		t.Errorf("version %d, want %d", v, version+2)
	}
	got := map[string][]string{}
	for _, k := range snap.Kinds {
		for _, s := range k.Versions {
			got[k.Kind+" "+s.Version+" "+s.Doc.URL] = s.Clusters
		}
	}
	want := map[string][]string{
		"Widget v1 /openapi/v3/apis/example.com/v1?hash=A": {"c1", "c2"},
		"Widget v1 /openapi/v3/apis/example.com/v1?hash=B": {"c3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	f.set("c1", nil)
	f.set("c2", nil)
	f.set("c3", nil)
	if snap, _ := f.Snapshot(); len(snap.Kinds) != 0 {
		t.Errorf("kinds of removed clusters: %+v", snap.Kinds)
	}
}
