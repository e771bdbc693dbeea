package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// freeAddr is testcluster.FreeAddr, short for the many servers of this package.
func freeAddr(t *testing.T) string { return testcluster.FreeAddr(t) }

// TestRun runs the aggregator as the command does, on a kubeconfig of the
// three test clusters, and asks it over HTTP what runs where.
func TestRun(t *testing.T) {
	env := testbed.Env(t)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, app.Options{
			Kubeconfigs: []string{kubeconfig},
			Contexts:    []string{"c1", "c3"},
			Addr:        addr,
			Informers:   informers.Options{Resources: []string{"namespaces", "configmaps"}},
		})
	}()
	query := `{"query":"{ clusters { name status } resources(filter: {kinds: [\"Namespace\"], nameContains: \"default\"}) { totalCount edges { node { cluster name } } } }"}`
	type answer struct {
		Data struct {
			Clusters  []struct{ Name, Status string }
			Resources struct {
				TotalCount int
				Edges      []struct {
					Node struct{ Cluster, Name string }
				}
			}
		}
	}
	var got answer
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(query))
		if err == nil {
			got = answer{}
			err = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
		}
		synced := len(got.Data.Clusters) == 2
		for _, c := range got.Data.Clusters {
			synced = synced && c.Status == "SYNCED"
		}
		if err == nil && synced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("aggregator not serving synced clusters: %v %+v", err, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var where []string
	for _, e := range got.Data.Resources.Edges {
		where = append(where, e.Node.Cluster+"/"+e.Node.Name)
	}
	if diff := cmp.Diff([]string{"c1/default", "c3/default"}, where); diff != "" {
		t.Errorf("namespaces named default (-want +got):\n%s", diff)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v after its context ended", err)
	}
}

func TestRunBadKubeconfig(t *testing.T) {
	env := testbed.Env(t)
	tests := []struct {
		name     string
		opts     app.Options
		wantErrs []string
	}{
		{name: "missing file", opts: app.Options{Kubeconfigs: []string{"/nonexistent/kubeconfig"}}, wantErrs: []string{"/nonexistent/kubeconfig"}},
		{name: "unknown context", opts: app.Options{Contexts: []string{"nope"}}, wantErrs: []string{"nope"}},
		{name: "bad resource type", opts: app.Options{Informers: informers.Options{Resources: []string{"Pods!"}}}, wantErrs: []string{"Pods!"}},
	}
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.opts.Kubeconfigs) == 0 {
				tt.opts.Kubeconfigs = []string{kubeconfig}
			}
			tt.opts.Addr = freeAddr(t)
			err := app.Run(t.Context(), tt.opts)
			if err == nil {
				t.Fatal("Run succeeded")
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}
