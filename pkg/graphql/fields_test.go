package graphql

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// TestFieldSelector: the filter's fieldSelector applies to resources,
// totalCount and facets, with the other filters.
func TestFieldSelector(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{name: "equals", filter: map[string]any{"fieldSelector": "data.color=blue"},
			want: []string{"c1/web/settings ConfigMap", "c2/web/settings ConfigMap", "c3/web/settings ConfigMap"}},
		{name: "cluster path", filter: map[string]any{"fieldSelector": "cluster in (c2,c3),metadata.name=web-1"},
			want: []string{"c2/web/web-1 Pod", "c3/web/web-1 Pod"}},
		{name: "across an array", filter: map[string]any{"fieldSelector": "metadata.ownerReferences[].kind=ReplicaSet"},
			want: []string{"c1/web/web-abc-1 Pod", "c1/web/web-abc-2 Pod"}},
		{name: "with labels, kinds and clusters", filter: map[string]any{"fieldSelector": "!metadata.ownerReferences", "labelSelector": "app=web",
			"kinds": []any{"Pod"}, "clusters": []any{"c1"}},
			want: []string{"c1/web/web-1 Pod", "c1/web/web-2 Pod", "c1/web/web-canary Pod"}},
		{name: "quoted key", filter: map[string]any{"fieldSelector": `metadata.annotations["owner"]=team-web@example.com,cluster=c1`},
			want: []string{"c1/web/settings ConfigMap"}},
		{name: "empty selects all", filter: map[string]any{"fieldSelector": "", "clusters": []any{"c2"}, "kinds": []any{"Pod"}},
			want: []string{"c2/web/web-1 Pod", "c2/web/web-2 Pod"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFilter(t, s, tc.filter, tc.want) })
	}
}

// checkFilter checks that the filter selects want (as page.names gives
// them) in resources, totalCount and facets.
func checkFilter(t *testing.T, s *Server, filter map[string]any, want []string) {
	t.Helper()
	var got page
	data(t, s, pageQuery, map[string]any{"filter": filter, "first": 100}, &got)
	if diff := cmp.Diff(want, got.names()); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if got.Resources.TotalCount != len(want) {
		t.Errorf("totalCount = %d, want %d", got.Resources.TotalCount, len(want))
	}
	var facets struct{ Facets []struct{ Count int } }
	data(t, s, `query($f: ResourceFilter) { facets(filter: $f, by: CLUSTER) { count } }`, map[string]any{"f": filter}, &facets)
	n := 0
	for _, fc := range facets.Facets {
		n += fc.Count
	}
	if n != len(want) {
		t.Errorf("facets count %d, want %d", n, len(want))
	}
}

// TestField: Resource.field is the value at the path, from the stored
// bytes: a list across an array, null when absent.
func TestField(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	res := run(t, s, `{ resource(cluster: "c1", kind: "Pod", namespace: "web", name: "web-abc-1") {
		cluster: field(path: "cluster") name: field(path: "metadata.name") owners: field(path: "metadata.ownerReferences[].kind")
		labels: field(path: "metadata.labels") tier: field(path: "metadata.labels.tier") none: field(path: "status.phase")
		noneAcross: field(path: "spec.containers[].image") } }`, nil)
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	want := `{"resource":{"cluster":"c1","name":"web-abc-1","owners":["ReplicaSet"],` +
		`"labels":{"app":"web","pod-template-hash":"abc","tier":"fe"},"tier":"fe","none":null,"noneAcross":null}}`
	if diff := cmp.Diff(want, string(mustJSON(t, res.Data))); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

// TestFieldBadInput: malformed paths and field selectors are
// BAD_USER_INPUT, quoting the reason.
func TestFieldBadInput(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct {
		name, query, reason string
	}{
		{name: "path", query: `{ resources(first: 1) { edges { node { field(path: "metadata..name") } } } }`,
			reason: `invalid path "metadata..name": expected a key, found '.'`},
		{name: "unquoted key", query: `{ resources(first: 1) { edges { node { field(path: "metadata.annotations.example.com/owner") } } } }`,
			reason: `unexpected '/'`},
		{name: "selector operator", query: `{ resources(filter: {fieldSelector: "status.phase~Running"}) { totalCount } }`,
			reason: `invalid field selector "status.phase~Running": expected an operator`},
		{name: "selector number", query: `{ facets(by: CLUSTER, filter: {fieldSelector: "status.restartCount>many"}) { count } }`,
			reason: `> needs a number, got "many"`},
		{name: "selector list", query: `{ resources(filter: {fieldSelector: "spec.nodeName in (a,b"}) { totalCount } }`,
			reason: `expected ) to close the list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.query, nil)
			if diff := cmp.Diff([]string{CodeBadUserInput}, codes(res)); diff != "" {
				t.Fatalf("codes (-want +got):\n%s\n%s", diff, mustJSON(t, res))
			}
			if msg := res.Errors[0].Message; !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q does not say %q", msg, tc.reason)
			}
		})
	}
}

// TestFacetsByField: facets by FIELD count objects per value at the path,
// agree with the facets by label and cluster where the path names the
// same values, apply every filter, and count only what the caller sees.
func TestFacetsByField(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	facets := func(t *testing.T, s *Server, ctx context.Context, args string) []facet {
		t.Helper()
		res := s.Execute(ctx, Request{Query: `{ facets(` + args + `) { value count } }`})
		if len(res.Errors) > 0 {
			t.Fatalf("facets(%s): %v", args, res.Errors)
		}
		var got struct{ Facets []facet }
		if err := json.Unmarshal(mustJSON(t, res.Data), &got); err != nil {
			t.Fatal(err)
		}
		return got.Facets
	}
	for _, tc := range []struct {
		name        string
		field, same string // facets by field, and the facets they equal
	}{
		{"label", `by: FIELD, field: "metadata.labels.app"`, `by: LABEL, labelKey: "app"`},
		{"label with filters", `by: FIELD, field: "metadata.labels.tier", filter: {kinds: ["Pod"], clusters: ["c1", "c2"], labelSelector: "app=web"}`,
			`by: LABEL, labelKey: "tier", filter: {kinds: ["Pod"], clusters: ["c1", "c2"], labelSelector: "app=web"}`},
		{"cluster", `by: FIELD, field: "cluster", filter: {fieldSelector: "data.color=blue"}`, `by: CLUSTER, filter: {fieldSelector: "data.color=blue"}`},
		{"quoted key", `by: FIELD, field: "metadata[\"labels\"][\"app\"]", filter: {namespaces: ["web"]}`, `by: LABEL, labelKey: "app", filter: {namespaces: ["web"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := facets(t, s, t.Context(), tc.field)
			if len(got) == 0 {
				t.Fatal("no facets: the case tests nothing")
			}
			if diff := cmp.Diff(facets(t, s, t.Context(), tc.same), got); diff != "" {
				t.Errorf("facets(%s) (-facets(%s) +got):\n%s", tc.field, tc.same, diff)
			}
		})
	}
	t.Run("across an array", func(t *testing.T) {
		got := facets(t, s, t.Context(), `by: FIELD, field: "metadata.ownerReferences[].kind"`)
		var n int
		data(t, s, `{ resources(filter: {fieldSelector: "metadata.ownerReferences[].kind=ReplicaSet"}) { totalCount } }`, nil,
			&struct{ Resources struct{ TotalCount *int } }{Resources: struct{ TotalCount *int }{&n}})
		if i := slices.IndexFunc(got, func(f facet) bool { return f.Value == "ReplicaSet" }); i < 0 || got[i].Count != n || n == 0 {
			t.Errorf("facets %v, want ReplicaSet counted %d times", got, n)
		}
	})
	t.Run("a caller's own objects", func(t *testing.T) {
		// A caller who may list ConfigMaps only counts theirs.
		s := newServer(t, f.ix, f.tracker, Options{Authorizer: scopesAuthorizer{}})
		ctx := authn.WithUser(t.Context(), &authn.User{Name: "alice", Extra: map[string][]string{"scopes": {"configmaps"}}})
		got := facets(t, s, ctx, `by: FIELD, field: "cluster"`)
		want := facets(t, newServer(t, f.ix, f.tracker, Options{}), t.Context(), `by: CLUSTER, filter: {kinds: ["ConfigMap"]}`)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("facets (-all ConfigMaps +the caller's):\n%s", diff)
		}
	})
}

// TestFacetsByFieldBadInput: FIELD needs a well-formed field, and field goes
// with FIELD only.
func TestFacetsByFieldBadInput(t *testing.T) {
	f := newFixture(t)
	s := newServer(t, f.ix, f.tracker, Options{})
	for _, tc := range []struct{ args, reason string }{
		{`by: FIELD`, "facets by FIELD need a field"},
		{`by: FIELD, field: "status..phase"`, `invalid path "status..phase": expected a key, found '.'`},
		{`by: FIELD, field: ""`, `invalid path "": expected a key`},
		{`by: LABEL, labelKey: "app", field: "status.phase"`, "field is only used with by: FIELD"},
		{`by: CLUSTER, field: "status.phase"`, "field is only used with by: FIELD"},
		{`by: FIELD, field: "status.phase", labelKey: "app"`, "labelKey is only used with by: LABEL"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			res := run(t, s, `{ facets(`+tc.args+`) { value count } }`, nil)
			if diff := cmp.Diff([]string{CodeBadUserInput}, codes(res)); diff != "" {
				t.Fatalf("codes (-want +got):\n%s\n%s", diff, mustJSON(t, res))
			}
			if msg := res.Errors[0].Message; !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q does not say %q", msg, tc.reason)
			}
		})
	}
}

// TestFieldProjected: Resource.field answers the indexed paths from the
// values kept beside the body (object.Type.Projected) exactly as it answers
// from the body, scalars, lists and absent values alike.
func TestFieldProjected(t *testing.T) {
	query := `{ resources(filter: {kinds: ["Pod"]}, first: 10) { edges { node { name
		phase: field(path: "status.phase") node: field(path: "spec.nodeName") images: field(path: "spec.containers[].image")
		ip: field(path: "status.podIP") none: field(path: "status.nominatedNodeName") } } } }`
	answer := func(projected bool) (string, int) {
		ix := index.New(index.Options{})
		ty := *podType
		if projected {
			ty.Projected = fieldpath.NewSet(append(ix.IndexedPaths("pods"), fieldpath.MustParse("status.nominatedNodeName")))
		}
		kept := 0
		for _, o := range newBenchPodsOf(t, &ty, 5) {
			if _, ok := o.Projected(fieldpath.MustParse("spec.containers[].image")); ok {
				kept++
			}
			ix.Upsert(o)
		}
		s := newServer(t, ix, newFixture(t).tracker, Options{})
		res := run(t, s, query, nil)
		if len(res.Errors) > 0 {
			t.Fatal(res.Errors)
		}
		// The executor writes the fields without their resolver;
		// graphql-go's runs it.
		want := executeWithGraphQLGo(t, s, query, nil, "")
		if diff := cmp.Diff(jsonTokens(t, mustJSON(t, want)), jsonTokens(t, mustJSON(t, res))); diff != "" {
			t.Fatalf("projected %t: the executor differs from graphql-go (-graphql-go +executor):\n%s", projected, diff)
		}
		return string(mustJSON(t, res.Data)), kept
	}
	fromBody, _ := answer(false)
	projected, kept := answer(true)
	if kept != 5 {
		t.Fatalf("%d of 5 Pods keep their images beside the body", kept)
	}
	if !strings.Contains(fromBody, `"images":["registry.example/web:1.25.3","registry.example/envoy:1.30.1"]`) || !strings.Contains(fromBody, `"none":null`) {
		t.Fatalf("the page from the bodies lacks the images or the null: %s", fromBody)
	}
	if diff := cmp.Diff(fromBody, projected); diff != "" {
		t.Errorf("from the bodies (-) and from the values beside them (+):\n%s", diff)
	}
}
