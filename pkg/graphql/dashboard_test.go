package graphql

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/graphql/fleet"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// TestDashboardFields checks what the status page reads besides status:
// each cluster's server, version and status history (messages and server
// hidden from callers who may not list namespaces, as message is), each
// type's initial sync time, and the process's own health.
func TestDashboardFields(t *testing.T) {
	ix := index.New(index.Options{})
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	tr := health.NewTracker(ix, health.Options{Now: func() time.Time { return now }})
	tr.AddCluster("a")
	tr.Identify("a", "https://a.example:6443", "v1.36.3")
	tr.ResourceStarting("a", "pods", "Pod")
	now = now.Add(2 * time.Second)
	tr.ResourceSynced("a", "pods")
	now = now.Add(time.Minute)
	tr.Probe("a", errors.New("dial tcp 10.0.0.1:6443: connect: connection refused"))
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newServer(t, ix, tr, Options{Authorizer: scopesAuthorizer{}, Process: func() ProcessStatus {
		return ProcessStatus{Version: "v1.2.3", StartTime: started, Replica: "fleetcache-0", MemoryBytes: 100, MemoryLimitBytes: 200,
			ListSlots: 8, ListSlotsInUse: 1, ListsWaiting: 2, Goroutines: 30}
	}})
	const q = `{
  cluster(name: "a") { server kubernetesVersion history { status start end message } resources { resource initialSyncSeconds } }
  fleetcache { version startTime replica memoryBytes memoryLimitBytes listSlots listSlotsInUse listsWaiting goroutines }
}`
	type answer struct {
		Cluster struct {
			Server            *string
			KubernetesVersion string
			History           []struct {
				Status     string
				Start, End *time.Time
				Message    *string
			}
			Resources []struct {
				Resource           string
				InitialSyncSeconds *float64
			}
		}
		Fleetcache struct {
			Version, Replica                                    string
			StartTime                                           time.Time
			MemoryBytes, MemoryLimitBytes                       float64
			ListSlots, ListSlotsInUse, ListsWaiting, Goroutines int
		}
	}
	ask := func(scopes ...string) answer {
		var a answer
		dataAs(t, s, &authn.User{Name: "alice", Extra: map[string][]string{"scopes": scopes}}, q, &a)
		return a
	}
	a := ask("namespaces")
	if a.Cluster.Server == nil || *a.Cluster.Server != "https://a.example:6443" || a.Cluster.KubernetesVersion != "v1.36.3" {
		t.Errorf("server %v, version %q", a.Cluster.Server, a.Cluster.KubernetesVersion)
	}
	var statuses []string
	for _, p := range a.Cluster.History {
		statuses = append(statuses, p.Status)
	}
	if diff := cmp.Diff([]string{"PENDING", "SYNCING", "SYNCED", "DISCONNECTED"}, statuses); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	last := a.Cluster.History[len(a.Cluster.History)-1]
	if last.End != nil || last.Message == nil || !last.Start.Equal(now) {
		t.Errorf("the current period %+v: want open since now, with why", last)
	}
	if r := a.Cluster.Resources; len(r) != 1 || r[0].InitialSyncSeconds == nil || *r[0].InitialSyncSeconds != 2 {
		t.Errorf("resources %+v: want pods synced in 2 s", r)
	}
	if f := a.Fleetcache; f.Version != "v1.2.3" || f.Replica != "fleetcache-0" || !f.StartTime.Equal(started) || f.MemoryLimitBytes != 200 ||
		f.ListSlots != 8 || f.ListsWaiting != 2 || f.Goroutines != 30 {
		t.Errorf("fleetcache %+v", f)
	}

	b := ask()
	if b.Cluster.Server != nil || *b.Cluster.History[len(b.Cluster.History)-1].Message != fleet.HiddenDetails {
		t.Errorf("a caller who may not list namespaces sees server %v, history %+v", b.Cluster.Server, b.Cluster.History)
	}
}

// BenchmarkStatusPageQuery measures the status page's periodic query at
// fleet sizes, with and without the clusters' histories: every cluster
// with two types and four status periods (it went down and came back),
// and the process's health; it reports the answer's size.
func BenchmarkStatusPageQuery(b *testing.B) {
	const fields = `name labels status stale message objectCount currentAsOf lastEventTime changeRate ` +
		`server kubernetesVersion source controlPlaneHealthy controlPlaneMessage history { status start end message } ` +
		`resources { resource kind status objectCount currentAsOf lastError lastEventTime metadataOnly refused initialSyncSeconds }`
	for _, q := range []struct{ name, fields string }{
		{"history", fields},
		{"no-history", strings.Replace(fields, "history { status start end message } ", "", 1)},
	} {
		query := `{ clusters { ` + q.fields + ` } fleetcache { version startTime replica memoryBytes listSlots } }`
		benchStatusPageQuery(b, q.name, query)
	}
}

func benchStatusPageQuery(b *testing.B, name, query string) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("%s/clusters=%d", name, n), func(b *testing.B) {
			ix := index.New(index.Options{})
			tr := health.NewTracker(ix, health.Options{})
			for i := range n {
				name := fmt.Sprintf("cluster-%04d", i)
				tr.AddCluster(name)
				tr.Identify(name, "https://"+name+".example:6443", "v1.36.3")
				for _, r := range []string{"pods", "configmaps"} {
					tr.ResourceStarting(name, r, r)
					tr.ResourceSynced(name, r)
				}
				tr.Probe(name, errors.New("dial tcp: connection refused"))
				tr.Probe(name, nil)
				for _, r := range []string{"pods", "configmaps"} {
					tr.ResourceStarting(name, r, r)
					tr.ResourceSynced(name, r)
				}
			}
			s := newServer(b, ix, tr, Options{Process: func() ProcessStatus { return ProcessStatus{Version: "v1", StartTime: time.Now()} }})
			var size int
			for b.Loop() {
				res := s.Execute(b.Context(), Request{Query: query})
				out, err := res.MarshalJSON()
				if err != nil || len(res.Errors) > 0 {
					b.Fatal(err, res.Errors)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size), "bytes/answer")
		})
	}
}
