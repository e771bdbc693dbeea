package mcp_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	ixobject "github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/mcp"
)

// history is what happened to objects, by cluster/namespace/kind/name:
// each change as "TYPE@resourceVersion" ("DELETED" alone: a delete's
// resourceVersion is the server's, not returned to the client).
type history map[string][]string

// record adds what changes say happened.
func (h history) record(changes []mcp.Change) {
	for _, c := range changes {
		what := c.Type + "@" + c.ResourceVersion
		if c.Type == "DELETED" {
			what = c.Type
		}
		k := c.Cluster + "/" + c.Namespace + "/" + c.Kind + "/" + c.Name
		h[k] = append(h[k], what)
	}
}

// oldestFirst returns changes, newest first, the other way round (and
// the other way too).
func oldestFirst(changes []mcp.Change) []mcp.Change {
	out := slices.Clone(changes)
	slices.Reverse(out)
	return out
}

// only returns the objects of h in namespace ns.
func (h history) only(ns string) history {
	out := history{}
	for k, v := range h {
		if strings.Split(k, "/")[1] == ns {
			out[k] = v
		}
	}
	return out
}

// TestWhatChanged changes objects in both clusters (ConfigMaps in nsA and
// nsB created, modified and deleted; in c2 a Deployment created, scaled
// and deleted), waits until the aggregator's index has seen the last of
// them, and asks what_changed through the MCP Inspector's CLI: the answers
// are checked against what the test did, oldest first, newest first, in
// pages, by cluster and kind, and as alice, who sees nsA only. Bad
// arguments come back as tool errors that say what is wrong.
func TestWhatChanged(t *testing.T) {
	env := testbed.Env(t)
	f, admin, alice := startInspected(t)
	var before mcp.ChangesOutput
	admin.mustCall(t, "what_changed", map[string]any{"first": 1}, &before)
	start := time.Now().UTC().Truncate(time.Second)

	// The truth: what the test does, and the keys of the objects it does
	// it to in the index.
	truth := history{}
	var keys []ixobject.Key
	did := func(cluster, ns, kind, name string, what ...string) {
		k := cluster + "/" + ns + "/" + kind + "/" + name
		truth[k] = append(truth[k], what...)
	}
	for _, c := range env.Clusters() {
		kube := kubernetes.NewForConfigOrDie(c.AdminConfig())
		for _, ns := range []string{nsA, nsB} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "chg-cm", Namespace: ns, Labels: map[string]string{"app": "chg"}}, Data: map[string]string{"v": "1"}}
			did(c.Name(), ns, "ConfigMap", cm.Name, lifecycle(t, kube.CoreV1().ConfigMaps(ns), cm, func(cm *corev1.ConfigMap) { cm.Data["v"] = "2" })...)
			keys = append(keys, ixobject.Key{Cluster: c.Name(), Resource: "configmaps", Namespace: ns, Name: cm.Name})
		}
		if c.Name() != "c2" {
			continue
		}
		one, three, labels := int32(1), int32(3), map[string]string{"app": "chg"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "chg-deploy", Namespace: nsA, Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "chg", Image: "registry.example/chg:1.0"}}}}},
		}
		did(c.Name(), nsA, "Deployment.apps", d.Name, lifecycle(t, kube.AppsV1().Deployments(nsA), d, func(d *appsv1.Deployment) { d.Spec.Replicas = &three })...)
		keys = append(keys, ixobject.Key{Cluster: c.Name(), Resource: "deployments.apps", Namespace: nsA, Name: d.Name})
	}
	// A watch delivers an object's changes in order: once the deletes have
	// reached the index, so has the rest.
	testcluster.Eventually(t, 30*time.Second, "the test's deletes in the index", func() (bool, string) {
		for _, k := range keys {
			if f.agg.Index.Get(k) != nil {
				return false, k.String() + " still there"
			}
		}
		return true, ""
	})
	mine := map[string]any{"namespaces": []string{nsA, nsB}, "nameContains": "chg-", "since": before.Revision}

	var asc mcp.ChangesOutput
	t.Run("oldest first", func(t *testing.T) {
		admin.mustCall(t, "what_changed", with(mine, "order", "ASC"), &asc)
		got := history{}
		got.record(asc.Changes)
		if diff := cmp.Diff(truth, got); diff != "" {
			t.Errorf("(-truth +what_changed):\n%s", diff)
		}
		if asc.Returned != 15 || asc.NextCursor != "" || asc.Incomplete || !strings.HasPrefix(asc.Summary, "15 changes returned, oldest first") {
			t.Errorf("returned %d, nextCursor %q, incomplete %v, summary %q", asc.Returned, asc.NextCursor, asc.Incomplete, asc.Summary)
		}
		for i, c := range asc.Changes {
			at, err := time.Parse(time.RFC3339, c.Time)
			if err != nil || at.Before(start) || at.After(time.Now()) || (i > 0 && c.Time < asc.Changes[i-1].Time) {
				t.Errorf("change %d (%s %s) at %q: want a time of this test, in order", i, c.Type, c.Name, c.Time)
			}
		}
	})

	t.Run("newest first, in pages", func(t *testing.T) {
		var pages []mcp.Change
		after := ""
		for range len(asc.Changes) {
			var page mcp.ChangesOutput
			admin.mustCall(t, "what_changed", with(with(with(mine, "until", asc.Revision), "first", 4), "after", after), &page)
			pages = append(pages, page.Changes...)
			if after = page.NextCursor; after == "" {
				break
			}
		}
		if diff := cmp.Diff(oldestFirst(asc.Changes), pages); diff != "" {
			t.Errorf("(-oldest first, reversed +newest first in pages of 4):\n%s", diff)
		}
	})

	t.Run("a cluster and a kind, over the last ten minutes", func(t *testing.T) {
		var got mcp.ChangesOutput
		admin.mustCall(t, "what_changed", map[string]any{"clusters": []string{"c2"}, "kinds": []string{"Deployment.apps"}, "nameContains": "chg-", "since": "10m", "fields": []string{"spec.replicas"}}, &got)
		h := history{}
		h.record(oldestFirst(got.Changes))
		if diff := cmp.Diff(history{"c2/" + nsA + "/Deployment.apps/chg-deploy": truth["c2/"+nsA+"/Deployment.apps/chg-deploy"]}, h); diff != "" {
			t.Errorf("(-truth +what_changed):\n%s", diff)
		}
		// Newest first: the delete and the update carry 3 replicas, the
		// create 1.
		var replicas []string
		for _, c := range got.Changes {
			replicas = append(replicas, fmt.Sprint(c.Fields["spec.replicas"]))
		}
		if diff := cmp.Diff([]string{"3", "3", "1"}, replicas); diff != "" {
			t.Errorf("spec.replicas (-want +got):\n%s", diff)
		}
	})

	t.Run("alice sees nsA only", func(t *testing.T) {
		var got mcp.ChangesOutput
		alice.mustCall(t, "what_changed", map[string]any{"since": before.Revision}, &got)
		h := history{}
		h.record(oldestFirst(got.Changes))
		if diff := cmp.Diff(truth.only(nsA), h); diff != "" {
			t.Errorf("(-truth in %s +what_changed):\n%s", nsA, diff)
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		for _, c := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"since": "yesterday"}, `invalid since "yesterday": want a duration (1h, 30m), an RFC 3339 time`},
			{map[string]any{"order": "SIDEWAYS"}, "order"},
			{map[string]any{"after": "garbage"}, "invalid after cursor"},
			{map[string]any{"first": -1}, "first is -1: it must be 0 or more"},
		} {
			r := alice.call(t, "what_changed", c.args, nil)
			if !r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, c.want) {
				t.Errorf("%v: %+v, want a tool error that says %q", c.args, r, c.want)
			}
		}
	})
}

// writer is what lifecycle does to objects of one type in a namespace:
// a typed client-go client (kube.CoreV1().ConfigMaps(ns), …).
type writer[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// lifecycle creates obj, changes it with change, updates it and deletes
// it. It returns what happened as history records it: ADDED and MODIFIED
// with the resourceVersions the server returned, then DELETED.
func lifecycle[T metav1.Object](t *testing.T, w writer[T], obj T, change func(T)) []string {
	t.Helper()
	ctx := t.Context()
	created, err := w.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := created.GetResourceVersion()
	change(created)
	updated, err := w.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, updated.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return []string{"ADDED@" + rv, "MODIFIED@" + updated.GetResourceVersion(), "DELETED"}
}

// with returns args with key set to v ("" and nil leave it out).
func with(args map[string]any, key string, v any) map[string]any {
	out := maps.Clone(args)
	if v != "" && v != nil {
		out[key] = v
	}
	return out
}
