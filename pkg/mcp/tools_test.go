package mcp_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/mcp"
)

// keys returns the items as cluster/namespace/kind/name.
func keys(items []mcp.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Cluster + "/" + it.Namespace + "/" + it.Kind + "/" + it.Name
	}
	return out
}

func TestToolsList(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 100 || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: description %q, input schema %v, output schema %v: want a description for a model and both schemas", tool.Name, tool.Description, tool.InputSchema, tool.OutputSchema)
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: not annotated read-only", tool.Name)
		}
	}
	if diff := cmp.Diff([]string{"cluster_health", "count_resources", "find_resources", "get_resource", "get_table", "what_changed"}, slices.Sorted(slices.Values(names))); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestFind(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	for _, tt := range []struct {
		name  string
		args  map[string]any
		want  []string
		total int
	}{
		{"kind and label selector", map[string]any{"kinds": []string{"Pod"}, "labelSelector": "pod-template-hash=abc"},
			[]string{"c1/web/Pod/web-abc-1", "c1/web/Pod/web-abc-2"}, 2},
		{"clusters and namespaces", map[string]any{"clusters": []string{"c2"}, "namespaces": []string{"data"}},
			[]string{"c2/data/ConfigMap/db-config"}, 1},
		{"kind with a group", map[string]any{"kinds": []string{"Deployment.apps", "ReplicaSet"}},
			[]string{"c1/web/Deployment.apps/web", "c1/web/ReplicaSet.apps/web-abc"}, 2},
		{"search", map[string]any{"search": "canary"}, []string{"c1/web/Pod/web-canary"}, 1},
		{"sorted, first", map[string]any{"kinds": []string{"ConfigMap"}, "sort": []map[string]any{{"field": "metadata.name", "order": "DESC"}, {"field": "cluster", "order": "DESC"}}, "first": 2},
			[]string{"c3/web/ConfigMap/settings", "c2/web/ConfigMap/settings"}, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out mcp.FindOutput
			mustCall(t, cs, "find_resources", tt.args, &out)
			if diff := cmp.Diff(tt.want, keys(out.Items)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if out.TotalCount != tt.total || out.Returned != len(tt.want) {
				t.Errorf("totalCount %d, returned %d; want %d, %d", out.TotalCount, out.Returned, tt.total, len(tt.want))
			}
			if (out.NextCursor != "") != (tt.total > len(tt.want)) {
				t.Errorf("nextCursor %q with %d of %d returned", out.NextCursor, len(tt.want), tt.total)
			}
		})
	}

	t.Run("fields and stale clusters", func(t *testing.T) {
		var out mcp.FindOutput
		mustCall(t, cs, "find_resources", map[string]any{"kinds": []string{"ConfigMap"}, "namespaces": []string{"web"}, "clusters": []string{"c3"},
			"fields": []string{"data.color", "metadata.annotations.owner", "spec.missing"}}, &out)
		if len(out.Items) != 1 {
			t.Fatalf("items %v", out.Items)
		}
		want := map[string]any{"data.color": "blue", "metadata.annotations.owner": "team-web@example.com"}
		if diff := cmp.Diff(want, out.Items[0].Fields); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
		if len(out.StaleClusters) != 1 || out.StaleClusters[0].Cluster != "c3" || out.StaleClusters[0].Status != "DISCONNECTED" {
			t.Errorf("staleClusters %+v, want c3 DISCONNECTED", out.StaleClusters)
		}
		if !strings.Contains(out.Summary, "c3 (DISCONNECTED") || !strings.HasPrefix(out.Summary, "1 objects match; all 1 returned.") {
			t.Errorf("summary %q: want the count and the stale cluster", out.Summary)
		}
	})

	t.Run("paging", func(t *testing.T) {
		var all mcp.FindOutput
		mustCall(t, cs, "find_resources", map[string]any{}, &all)
		var paged []mcp.Item
		after := ""
		for range 30 {
			var out mcp.FindOutput
			mustCall(t, cs, "find_resources", map[string]any{"first": 4, "after": after}, &out)
			paged = append(paged, out.Items...)
			if out.TotalCount != all.TotalCount {
				t.Errorf("totalCount %d after %q, want %d", out.TotalCount, after, all.TotalCount)
			}
			if after = out.NextCursor; after == "" {
				break
			}
		}
		if diff := cmp.Diff(keys(all.Items), keys(paged)); diff != "" || all.TotalCount != len(all.Items) {
			t.Errorf("pages of 4 (-all +paged):\n%s\ntotal %d", diff, all.TotalCount)
		}
	})

	t.Run("sorted paging", func(t *testing.T) {
		sort := []map[string]any{{"field": "metadata.name", "order": "DESC"}}
		var all mcp.FindOutput
		mustCall(t, cs, "find_resources", map[string]any{"kinds": []string{"Pod"}, "sort": sort}, &all)
		var paged []mcp.Item
		after := ""
		for range 10 {
			var out mcp.FindOutput
			mustCall(t, cs, "find_resources", map[string]any{"kinds": []string{"Pod"}, "sort": sort, "first": 2, "after": after}, &out)
			paged = append(paged, out.Items...)
			if after = out.NextCursor; after == "" {
				break
			}
		}
		if diff := cmp.Diff(keys(all.Items), keys(paged)); diff != "" || len(paged) != 9 || all.Items[0].Name != "web-canary" {
			t.Errorf("sorted pages of 2 (-all +paged):\n%s", diff)
		}
	})
}

func TestGet(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	var y mcp.GetOutput
	res := mustCall(t, cs, "get_resource", map[string]any{"cluster": "c3", "kind": "ConfigMap", "namespace": "web", "name": "settings"}, &y)
	if !strings.Contains(y.Object, "\n  color: blue\n") || !strings.HasPrefix(y.Object, "apiVersion: v1\n") || y.Format != "yaml" {
		t.Errorf("YAML:\n%s", y.Object)
	}
	if y.Stale == nil || y.Stale.Status != "DISCONNECTED" || !strings.Contains(y.Summary, "stale") {
		t.Errorf("stale %+v, summary %q: want c3 DISCONNECTED", y.Stale, y.Summary)
	}
	if got := text(res); !strings.HasPrefix(got, "# ConfigMap settings in namespace web of cluster c3") || !strings.Contains(got, "color: blue") {
		t.Errorf("text:\n%s", got)
	}
	var j mcp.GetOutput
	mustCall(t, cs, "get_resource", map[string]any{"cluster": "c1", "kind": "Namespace", "name": "web", "format": "json"}, &j)
	if !strings.Contains(j.Object, `"kind": "Namespace"`) || j.Stale != nil {
		t.Errorf("JSON of a cluster-scoped object:\n%s (stale %+v)", j.Object, j.Stale)
	}
}

// TestGetBudget: an object larger than the budget is cut after a whole
// line, and the answer says so.
func TestGetBudget(t *testing.T) {
	f := graphqltest.NewFixture(t)
	cs := serve(t, f.Index, f.Tracker, mcp.Options{ResultBytes: 100}).connect(t, "admin-token")
	var out mcp.GetOutput
	mustCall(t, cs, "get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap", "namespace": "web", "name": "settings"}, &out)
	if !out.Truncated || len(out.Object) > 100 || !strings.HasSuffix(out.Object, "\n") || out.Bytes <= 100 {
		t.Errorf("truncated %v, %d of %d bytes:\n%s", out.Truncated, len(out.Object), out.Bytes, out.Object)
	}
	if !strings.Contains(out.Summary, "Cut at the 100 bytes size budget") {
		t.Errorf("summary %q", out.Summary)
	}
}

func TestCount(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	var out mcp.CountOutput
	mustCall(t, cs, "count_resources", map[string]any{"kinds": []string{"Pod"}, "groupBy": "CLUSTER"}, &out)
	want := []mcp.Group{{Value: "c1", Count: 5}, {Value: "c2", Count: 2}, {Value: "c3", Count: 2}}
	if diff := cmp.Diff(want, out.Groups); diff != "" || out.TotalCount != 9 {
		t.Errorf("Pods by cluster, total %d (-want +got):\n%s", out.TotalCount, diff)
	}
	if !strings.HasPrefix(out.Summary, "9 objects match. By cluster: c1 5, c2 2, c3 2.") {
		t.Errorf("summary %q", out.Summary)
	}
	mustCall(t, cs, "count_resources", map[string]any{"groupBy": "LABEL", "labelKey": "app", "top": 1}, &out)
	if diff := cmp.Diff([]mcp.Group{{Value: "web", Count: 14}}, out.Groups); diff != "" || out.MoreGroups != 1 {
		t.Errorf("top 1 by label app, %d more (-want +got):\n%s", out.MoreGroups, diff)
	}
}

func TestHealth(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	var out mcp.HealthOutput
	mustCall(t, cs, "cluster_health", map[string]any{"problemsOnly": true}, &out)
	if len(out.Clusters) != 1 || out.Clusters[0].Name != "c3" || out.Clusters[0].Status != "DISCONNECTED" || !strings.Contains(out.Clusters[0].Message, "connection refused") {
		t.Fatalf("problems: %+v", out.Clusters)
	}
	if !strings.HasPrefix(out.Summary, "3 clusters: 2 SYNCED, 1 DISCONNECTED. Not current: c3 DISCONNECTED: api server unreachable") {
		t.Errorf("summary %q", out.Summary)
	}
	var c1 mcp.HealthOutput
	mustCall(t, cs, "cluster_health", map[string]any{"cluster": "c1"}, &c1)
	if len(c1.Clusters) != 1 || c1.Clusters[0].Name != "c1" || c1.Clusters[0].Types != 5 || c1.Clusters[0].Problems != nil || c1.Clusters[0].Message != "" {
		t.Errorf("c1: %+v", c1.Clusters)
	}
}

func TestTable(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	var out mcp.TableOutput
	res := mustCall(t, cs, "get_table", map[string]any{"kinds": []string{"Deployment.apps", "ConfigMap"}, "clusters": []string{"c1"}, "wide": true}, &out)
	if len(out.Tables) != 2 || out.Returned != 3 || out.TotalCount != 3 {
		t.Fatalf("tables %+v", out)
	}
	cm := out.Tables[0]
	if diff := cmp.Diff([]string{"CLUSTER", "NAMESPACE", "NAME", "DATA", "AGE"}, cm.Columns); diff != "" || cm.Kind != "ConfigMap" {
		t.Errorf("ConfigMap columns (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c1", "web", "settings", "2"}, cm.Rows[1][:4]); diff != "" {
		t.Errorf("ConfigMap settings row (-want +got):\n%s", diff)
	}
	if d := out.Tables[1]; d.Kind != "Deployment.apps" || !slices.Contains(d.Columns, "IMAGES") {
		t.Errorf("Deployment table %+v: want -o wide's IMAGES", d)
	}
	if got := text(res); !strings.Contains(got, "# ConfigMap\nCLUSTER   NAMESPACE   NAME        DATA   AGE\nc1        data        db-config   0      ") {
		t.Errorf("text:\n%s", got)
	}
}

// TestNamespaceLimited: a caller who may list only the namespace web sees
// only it, through every tool and resource.
func TestNamespaceLimited(t *testing.T) {
	cs := fixture(t).connect(t, "alice-token")
	var found mcp.FindOutput
	mustCall(t, cs, "find_resources", map[string]any{}, &found)
	for _, it := range found.Items {
		if it.Namespace != "web" {
			t.Errorf("find_resources shows %s/%s/%s/%s", it.Cluster, it.Namespace, it.Kind, it.Name)
		}
	}
	if found.TotalCount != 16 || len(found.Items) != 16 {
		t.Errorf("find_resources: %d of %d, want the 16 objects of web", len(found.Items), found.TotalCount)
	}
	var counted mcp.CountOutput
	mustCall(t, cs, "count_resources", map[string]any{"groupBy": "NAMESPACE"}, &counted)
	if diff := cmp.Diff([]mcp.Group{{Value: "web", Count: 16}}, counted.Groups); diff != "" || counted.TotalCount != 16 {
		t.Errorf("count_resources by namespace (-want +got):\n%s", diff)
	}
	var table mcp.TableOutput
	mustCall(t, cs, "get_table", map[string]any{"namespaces": []string{"data", "web"}}, &table)
	for _, tb := range table.Tables {
		for _, r := range tb.Rows {
			if r[1] != "web" {
				t.Errorf("get_table shows %v", r)
			}
		}
	}
	if table.TotalCount != 16 {
		t.Errorf("get_table: totalCount %d, want 16", table.TotalCount)
	}
	var got mcp.GetOutput
	mustCall(t, cs, "get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap", "namespace": "web", "name": "settings"}, &got)
	if msg := call(t, cs, "get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap", "namespace": "data", "name": "db-config"}, nil); !strings.Contains(msg, `no ConfigMap "db-config" in namespace "data" of cluster "c1"`) {
		t.Errorf("get_resource of data/db-config: %q, want not found", msg)
	}
	var h mcp.HealthOutput
	mustCall(t, cs, "cluster_health", map[string]any{"cluster": "c3"}, &h)
	if m := h.Clusters[0].Message; strings.Contains(m, "127.0.0.1") {
		t.Errorf("cluster_health shows alice the message %q, which only those who may list every namespace see", m)
	}
	r, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "fleetcache://clusters/c3"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Contents[0].Text, "127.0.0.1") {
		t.Errorf("the resource shows alice %s", r.Contents[0].Text)
	}
}

func TestBadArguments(t *testing.T) {
	cs := fixture(t).connect(t, "admin-token")
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"find_resources", map[string]any{"labelSelector": "app in (web"}, `invalid label selector "app in (web"`},
		{"find_resources", map[string]any{"fieldSelector": "status.phase~Running"}, `invalid field selector "status.phase~Running"`},
		{"find_resources", map[string]any{"first": -1}, "first is -1: it must be 0 or more"},
		{"find_resources", map[string]any{"first": "ten"}, `validating /properties/first: type: ten has type "string", want "integer"`},
		{"find_resources", map[string]any{"after": "garbage"}, "cursor"},
		{"find_resources", map[string]any{"sort": []map[string]any{{"field": "spec.containers[].image"}}}, "spec.containers[].image"},
		{"find_resources", map[string]any{"sort": []map[string]any{{"field": "metadata.name", "order": "UP"}}}, "enum"},
		{"find_resources", map[string]any{"fields": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, "fields has 9 paths: at most 8"},
		{"find_resources", map[string]any{"fields": []string{"metadata..name"}}, `invalid path "metadata..name"`},
		{"find_resources", map[string]any{"clusterSelector": "env in"}, "invalid"},
		{"find_resources", map[string]any{"nmespaces": []string{"web"}}, "nmespaces"},
		{"get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap"}, `missing properties: ["name"]`},
		{"get_resource", map[string]any{"cluster": "c9", "kind": "ConfigMap", "namespace": "web", "name": "settings"}, `no cluster named "c9"`},
		{"get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap", "namespace": "web", "name": "nope"}, `no ConfigMap "nope" in namespace "web" of cluster "c1"`},
		{"get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap", "namespace": "web", "name": "settings", "format": "xml"}, "enum"},
		{"count_resources", map[string]any{"groupBy": "LABEL"}, "labelKey"},
		{"count_resources", map[string]any{"groupBy": "FIELD", "field": "status..phase"}, `invalid path "status..phase"`},
		{"count_resources", map[string]any{"top": -2}, "top is -2"},
		{"cluster_health", map[string]any{"cluster": "c9"}, `no cluster named "c9"; the clusters are: c1, c2, c3`},
		{"cluster_health", map[string]any{"selector": "env in"}, "invalid"},
		{"get_table", map[string]any{"labelSelector": "=web"}, "invalid label selector"},
	} {
		t.Run(fmt.Sprintf("%s %v", tt.tool, tt.args), func(t *testing.T) {
			msg := call(t, cs, tt.tool, tt.args, nil)
			if msg == "" || !strings.Contains(msg, tt.want) {
				t.Errorf("tool error %q, want one that says %q", msg, tt.want)
			}
		})
	}
}

func TestUnauthenticated(t *testing.T) {
	s := fixture(t)
	for _, token := range []string{"", "wrong"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %s, WWW-Authenticate %q; want 401 with the header", token, res.Status, res.Header.Get("WWW-Authenticate"))
		}
	}
}

// TestBudget: a call that would return 100,000 objects returns the
// budget's worth, the count and a cursor, from which the next call goes on.
func TestBudget(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	ix := index.New(index.Options{})
	for i := range n {
		ix.Upsert(graphqltest.NewObject(t, graphqltest.Spec{Cluster: fmt.Sprintf("c%d", i%4+1), Type: graphqltest.PodType, Namespace: "ns",
			Name: fmt.Sprintf("pod-%06d", i), Labels: map[string]string{"app": "web"}}))
	}
	tr := health.NewTracker(ix, health.Options{})
	const budget = 16 << 10
	cs := serve(t, ix, tr, mcp.Options{ResultBytes: budget}).connect(t, "admin-token")

	var first mcp.FindOutput
	res := mustCall(t, cs, "find_resources", map[string]any{"kinds": []string{"Pod"}}, &first)
	if first.TotalCount != n || !first.Truncated || first.NextCursor == "" {
		t.Fatalf("totalCount %d, truncated %v, nextCursor %q: want %d, true and a cursor", first.TotalCount, first.Truncated, first.NextCursor, n)
	}
	if size := len(fmt.Sprint(res.StructuredContent)); first.Returned < 50 || size > 2*budget {
		t.Errorf("%d objects in %d bytes: want the budget's worth", first.Returned, size)
	}
	want := fmt.Sprintf("%s objects match; %d returned here (cut at the 16 KiB size budget). More: call again with after set to nextCursor.", english(n), first.Returned)
	if first.Summary != want {
		t.Errorf("summary %q, want %q", first.Summary, want)
	}
	var next mcp.FindOutput
	mustCall(t, cs, "find_resources", map[string]any{"kinds": []string{"Pod"}, "after": first.NextCursor}, &next)
	last, following := first.Items[len(first.Items)-1], next.Items[0]
	if keys([]mcp.Item{last})[0] >= keys([]mcp.Item{following})[0] || next.Returned != first.Returned {
		t.Errorf("the next call starts at %v after %v, with %d objects (the first had %d)", following, last, next.Returned, first.Returned)
	}

	var table mcp.TableOutput
	mustCall(t, cs, "get_table", map[string]any{"kinds": []string{"Pod"}}, &table)
	if table.TotalCount != n || !table.Truncated || table.NextCursor == "" || table.Returned < 50 {
		t.Errorf("get_table: totalCount %d, truncated %v, nextCursor %q, returned %d", table.TotalCount, table.Truncated, table.NextCursor, table.Returned)
	}
}

// english writes n as the summaries do.
func english(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
