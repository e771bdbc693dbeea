package mcp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRenderTables(t *testing.T) {
	got := renderTables([]Table{
		{Kind: "Pod", Columns: []string{"CLUSTER", "NAMESPACE", "NAME", "STATUS"}, Rows: [][]string{{"prod-eu", "web", "web-1", "Running"}, {"c2", "web", "web-12", "Crash\tLoop"}}},
		{Kind: "Node", Columns: []string{"CLUSTER", "NAMESPACE", "NAME"}, Rows: [][]string{{"c1", "", "node-1"}}},
	})
	want := "# Pod\n" +
		"CLUSTER   NAMESPACE   NAME     STATUS\n" +
		"prod-eu   web         web-1    Running\n" +
		"c2        web         web-12   Crash Loop\n" +
		"\n# Node\n" +
		"CLUSTER   NAMESPACE   NAME\n" +
		"c1                    node-1\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSummaries(t *testing.T) {
	for _, tt := range []struct {
		name, got, want string
	}{
		{"all", listSummary("objects", listed{total: 3}, 3, 1024), "3 objects match; all 3 returned."},
		{"none", listSummary("objects", listed{total: 0, fresh: Freshness{DeniedClusters: []string{"c2"}}}, 0, 1024), "0 objects match. Left out, as your access there could not be checked: c2."},
		{"first", listSummary("objects", listed{total: 1500, next: "x"}, 1000, 1024), "1,500 objects match; 1,000 returned here. More: call again with after set to nextCursor."},
		{"budget and freshness", listSummary("objects", listed{total: 100_000, next: "x", truncated: true,
			fresh: Freshness{StaleClusters: []Stale{{Cluster: "c3", Status: "SYNCING"}}, DeniedClusters: []string{"c4"}}}, 150, 32<<10),
			"100,000 objects match; 150 returned here (cut at the 32 KiB size budget). More: call again with after set to nextCursor. " +
				"Stale clusters (their objects are the last known state; cluster_health says why): c3 (SYNCING, never current yet). " +
				"Left out, as your access there could not be checked: c4."},
		{"count", countSummary(CountInput{GroupBy: "FIELD", Field: "status.phase"}, CountOutput{TotalCount: 7,
			Groups: []Group{{"Running", 5}, {"", 1}}, MoreGroups: 1}), `7 objects match. By status.phase: Running 5, "" 1 and 1 more values.`},
		{"health", healthSummary([]ClusterHealth{{Name: "a", Status: "SYNCED"}, {Name: "b", Status: "DEGRADED", Problems: []TypeHealth{{LastError: "forbidden"}}}}, HealthOutput{Omitted: 1}),
			"2 clusters: 1 SYNCED, 1 DEGRADED. Not current: b DEGRADED: forbidden. 1 clusters left out by the size budget: ask for one cluster, a selector or problemsOnly."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got  %q\nwant %q", tt.got, tt.want)
			}
		})
	}
}
