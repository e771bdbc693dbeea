package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/graphql"
)

// sprocketVersion is a served version of the CRD sprockets.typed.example.com.
type sprocketVersion struct {
	name            string
	served, storage bool
	props           map[string]any
}

// sprocketCRD is the CRD sprockets.typed.example.com with versions.
func sprocketCRD(versions ...sprocketVersion) map[string]any {
	var vs []any
	for _, v := range versions {
		vs = append(vs, map[string]any{"name": v.name, "served": v.served, "storage": v.storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
				"properties": map[string]any{"spec": map[string]any{"type": "object", "properties": v.props}}}}})
	}
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "sprockets.typed.example.com"},
		"spec": map[string]any{"group": "typed.example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "sprockets", "singular": "sprocket", "kind": "Sprocket", "listKind": "SprocketList"},
			"versions": vs}}
}

var (
	sprocketV1beta1Props = map[string]any{
		"size":  map[string]any{"type": "integer"},
		"color": map[string]any{"type": "string"},
	}
	// v1 adds teeth: the schema shows it once the cache serves v1.
	sprocketV1Props = map[string]any{
		"size":  map[string]any{"type": "integer"},
		"color": map[string]any{"type": "string"},
		"teeth": map[string]any{"type": "integer", "description": "How many teeth the sprocket has."},
	}
)

// TestTypedCRDServedVersionChanges serves a CRD at v1beta1, then adds v1
// as its storage version and stops serving v1beta1, while fleetcache runs
// with a query and a subscription going: the cache moves to v1, the typed
// schema follows within seconds (v1's new field in, v1beta1 out of the
// kind's description), the subscription goes on, and typed answers equal
// the servers' objects at v1.
func TestTypedCRDServedVersionChanges(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	env := testbed.Env(t)
	ns := freshNamespace("sprocket")
	sprockets := gvr("typed.example.com", "v1beta1", "sprockets")
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		createNamespace(t, d, ns)
		create(t, d, crdGVR, &unstructured.Unstructured{Object: sprocketCRD(sprocketVersion{"v1beta1", true, true, sprocketV1beta1Props})})
		t.Cleanup(func() {
			// Gone before the next test (-count) creates it again.
			_ = d.Resource(crdGVR).Delete(context.Background(), "sprockets.typed.example.com", metav1.DeleteOptions{})
			testcluster.Eventually(t, 60*time.Second, "the CRD deleted in "+c.Name(), func() (bool, string) {
				_, err := d.Resource(crdGVR).Get(context.Background(), "sprockets.typed.example.com", metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
		})
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "typed.example.com/v1beta1", "kind": "Sprocket",
			"metadata": map[string]any{"namespace": ns, "name": "s-" + c.Name()}, "spec": map[string]any{"size": int64(2), "color": "red"}}}
		testcluster.Eventually(t, 30*time.Second, "the CRD to be served in "+c.Name(), func() (bool, string) {
			_, err := d.Resource(sprockets).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
	f := typedFleet(t, "sprockets.typed.example.com", "configmaps")
	f.waitSynced(t)
	f.waitType(t, "SprocketSpec", "color", true)
	sel := selection{"apiVersion": nil, "metadata": {"name": nil}, "spec": {"size": nil, "color": nil}}
	f.expectTyped(t, "sprockets", ns, sel, "v1beta1")

	sub, res := f.API.Subscribe(t.Context(), graphql.Request{Query: `subscription($ns: String!) {
		resourceEvents(filter: {namespaces: [$ns], kinds: ["ConfigMap", "Sprocket"]}) {
			type resource { cluster kind name apiVersion ... on Sprocket { spec { size } } ... on ConfigMap { data } } } }`,
		Variables: map[string]any{"ns": ns}})
	if sub == nil {
		t.Fatalf("Subscribe: %s", mustMarshal(t, res))
	}
	t.Cleanup(sub.Close)
	// A query runs throughout, answered whatever the schema's generation.
	stopQueries := f.queryThroughout(t, `{ resources(filter: {kinds: ["Sprocket"]}, first: 10) { totalCount edges { node { name } } } }`)
	stopTyped := f.queryThroughout(t, `{ sprockets(first: 10) { totalCount } }`)
	expectEvent(t, sub, "ConfigMap", "before", func() {
		create(t, dyn(t, env.Cluster("c1")), gvr("", "v1", "configmaps"), configMap(ns, "before", nil, map[string]any{"k": "v"}))
	})

	begin := time.Now()
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		u, err := d.Resource(crdGVR).Get(t.Context(), "sprockets.typed.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.Object["spec"] = sprocketCRD(sprocketVersion{"v1beta1", false, false, sprocketV1beta1Props},
			sprocketVersion{"v1", true, true, sprocketV1Props})["spec"]
		if _, err := d.Resource(crdGVR).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every cluster's cache at v1: the kind's description names v1
	// alone, and v1's field is in.
	testcluster.Eventually(t, 30*time.Second, "Sprocket served at v1 alone", func() (bool, string) {
		var got map[string]*struct {
			Description string
			Fields      []struct{ Name string }
		}
		f.mustQuery(t, `{ spec: __type(name: "SprocketSpec") { fields { name } } kind: __type(name: "Sprocket") { description } }`, nil, &got)
		if got["spec"] == nil || got["kind"] == nil {
			return false, "no Sprocket"
		}
		teeth := slices.ContainsFunc(got["spec"].Fields, func(f struct{ Name string }) bool { return f.Name == "teeth" })
		d := got["kind"].Description
		return teeth && strings.Contains(d, "v1") && !strings.Contains(d, "v1beta1"), fmt.Sprintf("teeth %v, description %q", teeth, d)
	})
	followed := time.Since(begin)
	t.Logf("the typed schema followed v1 in %v", followed.Round(time.Millisecond))
	if followed > 15*time.Second {
		t.Errorf("the typed schema followed v1 in %v, want seconds", followed)
	}
	sel["spec"]["teeth"] = nil
	f.expectTyped(t, "sprockets", ns, sel, "v1")

	// The subscription started before goes on: a Sprocket created at v1
	// and a ConfigMap reach it.
	expectEvent(t, sub, "Sprocket", "toothed", func() {
		create(t, dyn(t, env.Cluster("c2")), gvr("typed.example.com", "v1", "sprockets"), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "typed.example.com/v1", "kind": "Sprocket",
			"metadata": map[string]any{"namespace": ns, "name": "toothed"}, "spec": map[string]any{"size": int64(5), "teeth": int64(40)}}})
	})
	expectEvent(t, sub, "ConfigMap", "after", func() {
		create(t, dyn(t, env.Cluster("c1")), gvr("", "v1", "configmaps"), configMap(ns, "after", nil, map[string]any{"k": "v"}))
	})
	f.expectTyped(t, "sprockets", ns, sel, "v1")
	if failed := stopQueries(); len(failed) > 0 {
		t.Errorf("queries failed while the version changed: %v", failed)
	}
	if failed := stopTyped(); len(failed) > 0 {
		t.Logf("typed queries failed while the version changed: %d, first %v", len(failed), failed[0])
	}
}

// expectTyped waits until the typed answers of root in ns equal the
// servers' objects at version, field by field.
func (f *fleet) expectTyped(t *testing.T, root, ns string, sel selection, version string) {
	t.Helper()
	want := serverNodes(t, gvr("typed.example.com", version, root), ns, sel, nil)
	testcluster.Eventually(t, 30*time.Second, "typed "+root+" equal to the servers' at "+version, func() (bool, string) {
		got, total := f.typedNodes(t, root, ns, sel)
		diff := gocmp.Diff(want, got)
		return diff == "" && total == len(want), fmt.Sprintf("totalCount %d; (-server +answer):\n%s", total, diff)
	})
}

// queryThroughout runs q over and over until the returned function is
// called, which returns the errors of the answers that failed.
func (f *fleet) queryThroughout(t *testing.T, q string) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []string)
	go func() {
		var failed []string
		for ctx.Err() == nil {
			res := f.API.Execute(ctx, graphql.Request{Query: q})
			if len(res.Errors) > 0 && ctx.Err() == nil {
				failed = append(failed, fmt.Sprint(res.Errors))
			}
		}
		done <- failed
	}()
	stopped := false
	stop := func() []string {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return stop
}

// expectEvent runs action and waits until sub delivers the ADDED event of
// the object kind/name, skipping the others (the Sprockets' own, as the
// cache moves to another version), and returns that event's payload.
func expectEvent(t *testing.T, sub *graphql.Subscription, kind, name string, action func()) []byte {
	t.Helper()
	action()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		r, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no ADDED event for %s %s: %v", kind, name, err)
		}
		var got struct {
			Data struct {
				ResourceEvents struct {
					Type     string
					Resource struct{ Kind, Name string }
				}
			}
			Errors []any
		}
		b := mustMarshal(t, r)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Errors) > 0 {
			t.Fatalf("subscription error: %s", b)
		}
		e := got.Data.ResourceEvents
		if e.Type == "ADDED" && e.Resource.Kind == kind && e.Resource.Name == name {
			return b
		}
	}
}
