package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/nodetest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/mcp"
)

// toolResult is a tools/call result as the Inspector prints it.
type toolResult struct {
	Content []struct {
		Type, Text string
	}
	StructuredContent json.RawMessage
	IsError           bool
}

// inspector is the Inspector's CLI against a fleet, as one user.
type inspector struct {
	f        *fleet
	dir, tok string
}

// call calls a tool with the Inspector and decodes its structured answer
// into out, unless it is a tool error.
func (in inspector) call(t *testing.T, tool string, args map[string]any, out any) toolResult {
	t.Helper()
	cli := []string{"--method", "tools/call", "--tool-name", tool}
	for k, v := range args {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		cli = append(cli, "--tool-arg", k+"="+string(b))
	}
	var r toolResult
	in.f.inspect(t, in.dir, in.tok, &r, cli...)
	if !r.IsError && out != nil {
		if err := json.Unmarshal(r.StructuredContent, out); err != nil {
			t.Fatalf("%s: decode %s: %v", tool, r.StructuredContent, err)
		}
	}
	return r
}

// mustCall is call for calls that must succeed.
func (in inspector) mustCall(t *testing.T, tool string, args map[string]any, out any) toolResult {
	t.Helper()
	r := in.call(t, tool, args, out)
	if r.IsError {
		t.Fatalf("%s %v: tool error %+v", tool, args, r.Content)
	}
	return r
}

// startInspected starts a fleet whose callers' tokens c1 reviews, and
// returns it with the Inspector's CLI as admin and as alice.
func startInspected(t *testing.T) (f *fleet, admin, alice inspector) {
	t.Helper()
	f = startFleet(t, app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: testbed.Env(t).Cluster("c1").AdminConfig()})
	dir := nodetest.Install(t, inspectorPackage)
	return f, inspector{f, dir, token(t, "admin")}, inspector{f, dir, token(t, "alice")}
}

// keys returns items as the oracle names objects.
func keys(items []mcp.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Cluster + "/" + it.Namespace + "/" + it.Kind + "/" + it.Name
	}
	return out
}

// inNamespace keeps the objects of ns.
func inNamespace(ns string) func(object) bool {
	return func(o object) bool { return strings.Split(o, "/")[1] == ns }
}

// TestInspector drives /mcp with the MCP Inspector's CLI against real API
// servers: it lists the tools, resources and prompts, calls every tool and
// checks the answers against the API servers' own lists and Tables, as an
// administrator and as alice, who may list ConfigMaps, Pods and
// Deployments in nsA only.
func TestInspector(t *testing.T) {
	env := testbed.Env(t)
	f, admin, alice := startInspected(t)
	dir := admin.dir
	truth := oracle(t, nil)
	slices.Sort(truth)

	t.Run("tools/list", func(t *testing.T) {
		var r struct {
			Tools []struct {
				Name, Description         string
				InputSchema, OutputSchema map[string]any
			}
		}
		f.inspect(t, dir, admin.tok, &r, "--method", "tools/list")
		var names []string
		for _, tool := range r.Tools {
			names = append(names, tool.Name)
			if tool.Description == "" || tool.InputSchema["type"] != "object" || tool.OutputSchema["type"] != "object" {
				t.Errorf("%s: description %q, schemas %v %v", tool.Name, tool.Description, tool.InputSchema, tool.OutputSchema)
			}
		}
		if diff := cmp.Diff([]string{"cluster_health", "count_resources", "find_resources", "get_resource", "get_table", "what_changed"}, slices.Sorted(slices.Values(names))); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
	})

	t.Run("find_resources", func(t *testing.T) {
		var got mcp.FindOutput
		admin.mustCall(t, "find_resources", map[string]any{"namespaces": []string{nsA, nsB}, "kinds": []string{"ConfigMap", "Pod", "Deployment.apps"}}, &got)
		k := keys(got.Items)
		slices.Sort(k)
		if diff := cmp.Diff(truth, k); diff != "" || got.TotalCount != len(truth) || got.NextCursor != "" {
			t.Errorf("totalCount %d, nextCursor %q (-truth +got):\n%s", got.TotalCount, got.NextCursor, diff)
		}
		// Paged by two, with a field, in the order of the index.
		var paged []string
		after := ""
		for range len(truth) {
			var page mcp.FindOutput
			admin.mustCall(t, "find_resources", map[string]any{"kinds": []string{"Pod"}, "labelSelector": "app in (web,api)", "first": 2, "after": after, "fields": []string{"spec.containers[].image"}}, &page)
			for _, it := range page.Items {
				paged = append(paged, it.Cluster+"/"+it.Namespace+"/"+it.Kind+"/"+it.Name)
				image := fmt.Sprint(it.Fields["spec.containers[].image"])
				if want := "[registry.example/" + it.Labels["app"] + ":1.0]"; image != want {
					t.Errorf("%s: images %s, want %s", it.Name, image, want)
				}
			}
			if after = page.NextCursor; after == "" {
				break
			}
		}
		want := oracle(t, func(o object) bool { return strings.Contains(o, "/Pod/") })
		slices.Sort(want)
		if diff := cmp.Diff(want, paged); diff != "" {
			t.Errorf("Pods in pages of 2 (-truth +got):\n%s", diff)
		}
	})

	t.Run("count_resources", func(t *testing.T) {
		var got mcp.CountOutput
		admin.mustCall(t, "count_resources", map[string]any{"kinds": []string{"Deployment.apps"}, "namespaces": []string{nsA, nsB}, "groupBy": "CLUSTER"}, &got)
		want := map[string]int{}
		for _, o := range oracle(t, func(o object) bool { return strings.Contains(o, "/Deployment.apps/") }) {
			want[strings.Split(o, "/")[0]]++
		}
		have := map[string]int{}
		for _, g := range got.Groups {
			have[g.Value] = g.Count
		}
		if diff := cmp.Diff(want, have); diff != "" || got.TotalCount != 5 {
			t.Errorf("Deployments by cluster, total %d (-truth +got):\n%s", got.TotalCount, diff)
		}
	})

	t.Run("get_resource", func(t *testing.T) {
		pod, err := kubernetes.NewForConfigOrDie(env.Cluster("c2").AdminConfig()).CoreV1().Pods(nsA).Get(t.Context(), "api-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pod.ManagedFields) == 0 {
			t.Fatal("the API server's Pod has no managedFields: the check below would prove nothing")
		}
		var got mcp.GetOutput
		r := admin.mustCall(t, "get_resource", map[string]any{"cluster": "c2", "kind": "Pod", "namespace": nsA, "name": "api-0"}, &got)
		var obj struct {
			Metadata struct {
				UID, ResourceVersion string
				ManagedFields        []any
			}
		}
		if err := yaml.Unmarshal([]byte(got.Object), &obj); err != nil {
			t.Fatalf("YAML %q: %v", got.Object, err)
		}
		if obj.Metadata.UID != string(pod.UID) || obj.Metadata.ResourceVersion != pod.ResourceVersion || obj.Metadata.ManagedFields != nil || strings.Contains(got.Object, "managedFields") {
			t.Errorf("get_resource gives uid %s rv %s managedFields %v; the server %s %s", obj.Metadata.UID, obj.Metadata.ResourceVersion, obj.Metadata.ManagedFields, pod.UID, pod.ResourceVersion)
		}
		if len(r.Content) == 0 || !strings.HasPrefix(r.Content[0].Text, "# Pod api-0 in namespace "+nsA+" of cluster c2") {
			t.Errorf("text %+v", r.Content)
		}
		var j mcp.GetOutput
		admin.mustCall(t, "get_resource", map[string]any{"cluster": "c1", "kind": "Deployment.apps", "namespace": nsB, "name": "web", "format": "json"}, &j)
		if !strings.Contains(j.Object, `"kind": "Deployment"`) {
			t.Errorf("JSON %s", j.Object)
		}
	})

	t.Run("get_table", func(t *testing.T) {
		var got mcp.TableOutput
		admin.mustCall(t, "get_table", map[string]any{"clusters": []string{"c1"}, "namespaces": []string{nsA}, "kinds": []string{"Pod"}, "wide": true}, &got)
		if len(got.Tables) != 1 {
			t.Fatalf("tables %+v", got.Tables)
		}
		gotRows := columns(got.Tables[0].Columns, got.Tables[0].Rows, "NAME", "READY", "STATUS", "RESTARTS", "NODE")
		raw, err := kubernetes.NewForConfigOrDie(env.Cluster("c1").AdminConfig()).CoreV1().RESTClient().Get().Namespace(nsA).Resource("pods").
			SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			t.Fatal(err)
		}
		var names []string
		var cells [][]string
		for _, c := range table.ColumnDefinitions {
			names = append(names, strings.ToUpper(c.Name))
		}
		for _, r := range table.Rows {
			row := make([]string, len(r.Cells))
			for i, c := range r.Cells {
				row[i] = fmt.Sprint(c)
			}
			cells = append(cells, row)
		}
		want := columns(names, cells, "NAME", "READY", "STATUS", "RESTARTS", "NODE")
		if diff := cmp.Diff(want, gotRows); diff != "" || len(want) != 2 {
			t.Errorf("the Pods' columns (-API server +get_table):\n%s", diff)
		}
	})

	t.Run("cluster_health", func(t *testing.T) {
		var got mcp.HealthOutput
		admin.mustCall(t, "cluster_health", map[string]any{}, &got)
		if len(got.Clusters) != 2 || !strings.HasPrefix(got.Summary, "2 clusters: 2 SYNCED.") {
			t.Errorf("clusters %+v, summary %q", got.Clusters, got.Summary)
		}
		for _, c := range got.Clusters {
			if c.Status != "SYNCED" || c.Types != len(cachedResources) || c.ObjectCount < 12 {
				t.Errorf("%+v", c)
			}
		}
	})

	t.Run("resources and prompts", func(t *testing.T) {
		var list struct{ Resources []struct{ URI string } }
		f.inspect(t, dir, admin.tok, &list, "--method", "resources/list")
		var templates struct {
			ResourceTemplates []struct{ URITemplate string }
		}
		f.inspect(t, dir, admin.tok, &templates, "--method", "resources/templates/list")
		if len(list.Resources) != 1 || list.Resources[0].URI != "fleetcache://clusters" || len(templates.ResourceTemplates) != 1 {
			t.Errorf("resources %+v, templates %+v", list, templates)
		}
		var read struct{ Contents []struct{ Text string } }
		f.inspect(t, dir, admin.tok, &read, "--method", "resources/read", "--uri", "fleetcache://clusters/c2")
		var c2 mcp.ClusterHealth
		if err := json.Unmarshal([]byte(read.Contents[0].Text), &c2); err != nil || c2.Name != "c2" || c2.Status != "SYNCED" {
			t.Errorf("c2's health: %+v, %v", c2, err)
		}
		var prompts struct{ Prompts []struct{ Name string } }
		f.inspect(t, dir, admin.tok, &prompts, "--method", "prompts/list")
		var prompt struct {
			Messages []struct{ Content struct{ Text string } }
		}
		f.inspect(t, dir, admin.tok, &prompt, "--method", "prompts/get", "--prompt-name", "why_not_running_everywhere", "--prompt-args", "kind=Deployment.apps", "name=api")
		if len(prompts.Prompts) != 2 || len(prompt.Messages) != 1 || !strings.Contains(prompt.Messages[0].Content.Text, `Deployment.apps "api"`) {
			t.Errorf("prompts %+v, prompt %+v", prompts, prompt)
		}
	})

	// alice sees nsA only, through every tool.
	t.Run("alice", func(t *testing.T) {
		mine := oracle(t, inNamespace(nsA))
		slices.Sort(mine)
		var found mcp.FindOutput
		alice.mustCall(t, "find_resources", map[string]any{}, &found)
		k := keys(found.Items)
		slices.Sort(k)
		if diff := cmp.Diff(mine, k); diff != "" || found.TotalCount != len(mine) {
			t.Errorf("find_resources, totalCount %d (-nsA +got):\n%s", found.TotalCount, diff)
		}
		var counted mcp.CountOutput
		alice.mustCall(t, "count_resources", map[string]any{"groupBy": "NAMESPACE"}, &counted)
		if diff := cmp.Diff([]mcp.Group{{Value: nsA, Count: len(mine)}}, counted.Groups); diff != "" || counted.TotalCount != len(mine) {
			t.Errorf("count_resources by namespace (-want +got):\n%s", diff)
		}
		var table mcp.TableOutput
		alice.mustCall(t, "get_table", map[string]any{"namespaces": []string{nsA, nsB}}, &table)
		rows := 0
		for _, tb := range table.Tables {
			for _, r := range tb.Rows {
				rows++
				if r[1] != nsA {
					t.Errorf("get_table shows alice %v", r)
				}
			}
		}
		if rows != len(mine) || table.TotalCount != len(mine) {
			t.Errorf("get_table: %d rows, totalCount %d; want %d", rows, table.TotalCount, len(mine))
		}
		var got mcp.GetOutput
		alice.mustCall(t, "get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap", "namespace": nsA, "name": "cfg-0"}, &got)
		r := alice.call(t, "get_resource", map[string]any{"cluster": "c1", "kind": "ConfigMap", "namespace": nsB, "name": "cfg-0"}, nil)
		if !r.IsError || !strings.Contains(r.Content[0].Text, `no ConfigMap "cfg-0" in namespace "`+nsB+`" of cluster "c1"`) {
			t.Errorf("get_resource in nsB: %+v, want not found", r)
		}
		var health mcp.HealthOutput
		alice.mustCall(t, "cluster_health", map[string]any{"cluster": "c2"}, &health)
		if len(health.Clusters) != 1 || health.Clusters[0].Status != "SYNCED" {
			t.Errorf("cluster_health: %+v", health)
		}
	})

	// A cluster down: cluster_health says it is not current and why, and
	// the answers that read it name it as stale.
	t.Run("a cluster down", func(t *testing.T) {
		c2 := env.Cluster("c2")
		if err := c2.Stop(); err != nil {
			t.Fatal(err)
		}
		restarted := false
		restart := func() {
			if !restarted {
				restarted = true
				if err := c2.Restart(context.Background()); err != nil {
					t.Fatalf("restart c2: %v", err)
				}
			}
		}
		defer restart()
		var health mcp.HealthOutput
		testcluster.Eventually(t, 60*time.Second, "cluster_health to report c2", func() (bool, string) {
			health = mcp.HealthOutput{}
			admin.mustCall(t, "cluster_health", map[string]any{"problemsOnly": true}, &health)
			return len(health.Clusters) == 1 && health.Clusters[0].Name == "c2", health.Summary
		})
		if c := health.Clusters[0]; c.Status == "SYNCED" || c.Message == "" || !strings.Contains(health.Summary, "Not current: c2 "+c.Status) {
			t.Errorf("c2: %+v, summary %q: want why it is not current", c, health.Summary)
		}
		var found mcp.FindOutput
		admin.mustCall(t, "find_resources", map[string]any{"clusters": []string{"c2"}, "namespaces": []string{nsA}, "kinds": []string{"Pod"}}, &found)
		if len(found.StaleClusters) != 1 || found.StaleClusters[0].Cluster != "c2" || !strings.Contains(found.Summary, "Stale clusters") {
			t.Errorf("find_resources over c2: %+v", found)
		}
		// Its last known Pods, or none if the access review cannot reach it
		// any more: then the answer says so.
		if len(found.Items) != 3 && (len(found.DeniedClusters) != 1 || !strings.Contains(found.Summary, "Left out")) {
			t.Errorf("find_resources over c2: %d Pods, deniedClusters %v, summary %q", len(found.Items), found.DeniedClusters, found.Summary)
		}
		restart()
		testcluster.Eventually(t, 60*time.Second, "c2 current again", func() (bool, string) {
			health = mcp.HealthOutput{}
			admin.mustCall(t, "cluster_health", map[string]any{"problemsOnly": true}, &health)
			return len(health.Clusters) == 0, health.Summary
		})
	})

	t.Run("bad arguments", func(t *testing.T) {
		for _, c := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"find_resources", map[string]any{"labelSelector": "app in (web"}, `invalid label selector "app in (web"`},
			{"count_resources", map[string]any{"groupBy": "FIELD"}, "field"},
			{"get_resource", map[string]any{"cluster": "c1", "kind": "Pod"}, "name"},
			{"get_table", map[string]any{"first": "many"}, "first"},
		} {
			r := alice.call(t, c.tool, c.args, nil)
			if !r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, c.want) {
				t.Errorf("%s %v: %+v, want a tool error that says %q", c.tool, c.args, r, c.want)
			}
		}
	})
}

// columns returns the cells of the named columns of each row.
func columns(names []string, rows [][]string, want ...string) [][]string {
	var out [][]string
	for _, r := range rows {
		var row []string
		for _, w := range want {
			if i := slices.Index(names, w); i >= 0 {
				row = append(row, r[i])
			}
		}
		out = append(out, row)
	}
	return out
}
