package filter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// TestParse checks the reading of each ResourceFilter field, and the
// errors of those that do not parse.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		arg      any
		want     string // the planner filter's fields, as describe writes them
		clusters []string
		err      string
	}{
		{name: "null", arg: nil, want: ""},
		{name: "empty", arg: map[string]any{}, want: ""},
		{name: "every field", arg: map[string]any{"clusters": []any{"c1", "c2"}, "kinds": []any{"Pod"}, "namespaces": []any{"a", ""},
			"labelSelector": "app=web", "nameContains": "web", "ownerUid": "u1", "fieldSelector": "status.phase=Running", "search": "redis"},
			want:     `clusters=[c1 c2] kinds=[Pod] namespaces=[a ] labels=app=web name=web owner=u1 fields=status.phase=Running search=redis`,
			clusters: []string{"c1", "c2"}},
		{name: "empty strings do not constrain", arg: map[string]any{"labelSelector": "", "ownerUid": "", "fieldSelector": "", "search": ""}, want: ""},
		{name: "a bad label selector", arg: map[string]any{"labelSelector": "app in ("}, err: `invalid label selector "app in ("`},
		{name: "a bad field selector", arg: map[string]any{"fieldSelector": "status.phase>x"}, err: "> needs a number"},
		{name: "through is refused", arg: map[string]any{"through": map[string]any{"nodes": map[string]any{}}},
			err: "not by subscriptions or changes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, clusters, err := Parse(tc.arg)
			if failed(t, err, tc.err) {
				return
			}
			var parts []string
			add := func(name string, v any, set bool) {
				if set {
					parts = append(parts, name+"="+fmt.Sprint(v))
				}
			}
			add("clusters", f.Clusters, f.Clusters != nil)
			add("kinds", f.Kinds, f.Kinds != nil)
			add("namespaces", f.Namespaces, f.Namespaces != nil)
			add("labels", f.Selector, f.Selector != nil)
			add("name", f.NameContains, f.NameContains != "")
			add("owner", f.OwnerUID, f.OwnerUID != "")
			add("fields", f.Fields.String(), !f.Fields.Empty())
			add("search", f.Search.String(), !f.Search.Empty())
			if got := strings.Join(parts, " "); got != tc.want {
				t.Errorf("filter %s, want %s", got, tc.want)
			}
			if diff := cmp.Diff(tc.clusters, clusters); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSplitThrough checks the reading of through: the relations, their
// related filters and limits, and the clear errors.
func TestSplitThrough(t *testing.T) {
	for _, tc := range []struct {
		name string
		arg  any
		want []string // relation, limit, and the related filter's selector
		rest map[string]any
		err  string
	}{
		{name: "no through", arg: map[string]any{"kinds": []any{"Pod"}}, rest: map[string]any{"kinds": []any{"Pod"}}},
		{name: "null", arg: nil},
		{name: "an empty through", arg: map[string]any{"through": map[string]any{}}, rest: map[string]any{}},
		{name: "nodes, the default limit", arg: map[string]any{"namespaces": []any{"a"}, "through": map[string]any{"nodes": map[string]any{"labelSelector": "zone=a"}}},
			want: []string{"nodes 1000 zone=a []"}, rest: map[string]any{"namespaces": []any{"a"}}},
		{name: "owners and nodes, in that order", arg: map[string]any{"through": map[string]any{
			"owners": map[string]any{"kinds": []any{"Deployment.apps"}, "limit": 5},
			"nodes":  map[string]any{"limit": 7}}},
			want: []string{"nodes 7  []", "owners 5  [Deployment.apps]"}, rest: map[string]any{}},
		{name: "services", arg: map[string]any{"through": map[string]any{"services": map[string]any{}}},
			err: "a filter through services is not answered: the Pods of many Services are a union of label selectors"},
		{name: "configMaps", arg: map[string]any{"through": map[string]any{"configMaps": map[string]any{}, "nodes": map[string]any{}}},
			err: "a filter through configMaps is not answered"},
		{name: "secrets", arg: map[string]any{"through": map[string]any{"secrets": map[string]any{}}}, err: "a filter through secrets is not answered"},
		{name: "a limit of 0", arg: map[string]any{"through": map[string]any{"nodes": map[string]any{"limit": 0}}},
			err: "through nodes: limit must be between 1 and 10000, got 0"},
		{name: "a limit over the maximum", arg: map[string]any{"through": map[string]any{"owners": map[string]any{"limit": MaxThroughLimit + 1}}},
			err: "through owners: limit must be between 1 and 10000, got 10001"},
		{name: "kinds of nodes", arg: map[string]any{"through": map[string]any{"nodes": map[string]any{"kinds": []any{"Node"}}}},
			err: "through nodes: kinds is for owners only"},
		{name: "a bad related selector", arg: map[string]any{"through": map[string]any{"owners": map[string]any{"labelSelector": "tier in ("}}},
			err: `through owners: invalid label selector "tier in ("`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, through, err := SplitThrough(tc.arg)
			if failed(t, err, tc.err) {
				return
			}
			var got []string
			for _, th := range through {
				sel := ""
				if th.Filter.Selector != nil {
					sel = th.Filter.Selector.String()
				}
				got = append(got, string(th.Relation)+" "+fmt.Sprint(th.Limit)+" "+sel+" "+fmt.Sprint(th.Filter.Kinds))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("through (-want +got):\n%s", diff)
			}
			if tc.rest != nil {
				if diff := cmp.Diff(tc.rest, rest); diff != "" {
					t.Errorf("rest (-want +got):\n%s", diff)
				}
			}
			if m, ok := tc.arg.(map[string]any); ok && m["through"] != nil {
				if _, _, err := Parse(rest); err != nil {
					t.Errorf("Parse of the rest: %v", err)
				}
			}
		})
	}
}

// TestParseSort checks sort keys: paths, order, and their bounds.
func TestParseSort(t *testing.T) {
	keys, err := ParseSort([]any{map[string]any{"field": "metadata.name", "order": "DESC"}, map[string]any{"field": "cluster"}})
	if err != nil || len(keys) != 2 || keys[0].Path.String() != "metadata.name" || !keys[0].Desc || keys[1].Desc {
		t.Errorf("ParseSort = %+v, %v", keys, err)
	}
	if keys, err := ParseSort(nil); keys != nil || err != nil {
		t.Errorf("ParseSort(nil) = %v, %v; want nil", keys, err)
	}
	tooMany := make([]any, MaxSortKeys+1)
	for i := range tooMany {
		tooMany[i] = map[string]any{"field": "metadata.name"}
	}
	for _, arg := range [][]any{tooMany, {map[string]any{"field": "spec.containers[].image"}}, {map[string]any{"field": "a..b"}}} {
		if _, err := ParseSort(arg); err == nil {
			t.Errorf("ParseSort(%v): no error", arg)
		}
	}
}

// TestFacetBy checks that labelKey and field go with their keys only.
func TestFacetBy(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		err  string
	}{
		{name: "cluster", args: map[string]any{"by": views.FacetCluster}},
		{name: "label", args: map[string]any{"by": views.FacetLabel, "labelKey": "app"}},
		{name: "cluster label", args: map[string]any{"by": FacetClusterLabel, "labelKey": "env"}},
		{name: "field", args: map[string]any{"by": views.FacetField, "field": "status.phase"}},
		{name: "label without a key", args: map[string]any{"by": views.FacetLabel}, err: "need a labelKey"},
		{name: "a key without label", args: map[string]any{"by": views.FacetKind, "labelKey": "app"}, err: "labelKey is only used"},
		{name: "field without a path", args: map[string]any{"by": views.FacetField}, err: "need a field"},
		{name: "a path without field", args: map[string]any{"by": views.FacetCluster, "field": "x"}, err: "field is only used"},
		{name: "a bad path", args: map[string]any{"by": views.FacetField, "field": "a..b"}, err: "a..b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			by, err := FacetBy(tc.args)
			if !failed(t, err, tc.err) && by.Key != tc.args["by"] {
				t.Errorf("key %v, want %v", by.Key, tc.args["by"])
			}
		})
	}
}

// TestClusterSelector checks the clusterSelector field.
func TestClusterSelector(t *testing.T) {
	if sel, err := ClusterSelector(map[string]any{"clusterSelector": "env=prod"}); err != nil || sel.String() != "env=prod" {
		t.Errorf("ClusterSelector = %v, %v", sel, err)
	}
	if sel, err := ClusterSelector(map[string]any{}); sel != nil || err != nil {
		t.Errorf("ClusterSelector of none = %v, %v", sel, err)
	}
	if _, err := ClusterSelector(map[string]any{"clusterSelector": "env in ("}); err == nil {
		t.Error("ClusterSelector of a bad selector: no error")
	}
	if got := Strings([]any{"a", 1, "b"}); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("Strings = %v", got)
	}
}

// failed checks err against want, a part of the error expected ("": none),
// and reports whether there was an error (the test has nothing more to
// check then).
func failed(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v, want %q", err, want)
	}
	return err != nil
}
