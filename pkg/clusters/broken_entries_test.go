package clusters

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// TestBrokenEntriesKeepTheirInventory checks that an inventory entry that
// cannot be used (a ClusterProfile with an unknown access provider, an
// Argo CD Secret with a bad config) shows its own labels and source, as
// the docs say, so that a portal filtering clusters by label does not hide
// exactly the broken ones; configured labels still win.
func TestBrokenEntriesKeepTheirInventory(t *testing.T) {
	providers, err := ParseProviders([]byte(`{"providers":[{"name":"token","execConfig":{"command":"t","apiVersion":"client.authentication.k8s.io/v1"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	badProfile := profile(map[string]string{"env": "prod", "region": "eu"}, map[string]any{
		"accessProviders": []any{map[string]any{"name": "unknown", "cluster": map[string]any{"server": "https://p"}}},
		"conditions": []any{map[string]any{"type": "ControlPlaneHealthy", "status": "True", "reason": "Up",
			"lastTransitionTime": "2026-01-01T00:00:00Z"}},
	})
	badArgo := argoSecret("cluster-west", map[string]string{ArgoCDSecretTypeLabel: ArgoCDSecretTypeCluster, "env": "staging"},
		map[string]string{"name": "west", "server": "https://west", "config": `{"bearerToken":`})

	reg := NewRegistry(newFakeRunner(), testOptions)
	store := inventory.NewStore()
	src := NewSources(reg, nil, SourcesOptions{Inventory: store, Labels: map[string]map[string]string{"west": {"tier": "2"}}})
	for source, r := range map[string]registration{"profiles": profileRegistration(badProfile, providers), "argo": argoCDRegistration(badArgo, false)} {
		r.key = source
		cs, invalid, dups := collect(source, []registration{r})
		if len(cs) != 0 || len(invalid) != 1 || len(dups) != 0 {
			t.Fatalf("%s: clusters %v, invalid %v, dups %v; want one unusable entry", source, cs, invalid, dups)
		}
		if err := src.Set(source, cs, invalid); err != nil {
			t.Fatal(err)
		}
	}
	healthy := true
	want := map[string]inventory.Info{
		"prod": {Labels: map[string]string{"env": "prod", "region": "eu"}, Source: "ClusterProfile fleet/prod", ControlPlaneHealthy: &healthy, ControlPlaneMessage: "Up"},
		"west": {Labels: map[string]string{"env": "staging", "tier": "2"}, Source: "Argo CD cluster secret fleet/cluster-west"},
	}
	got := map[string]inventory.Info{}
	for name := range want {
		if i, ok := store.Get(name); ok {
			got[name] = i
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	if len(reg.Names()) != 0 {
		t.Errorf("registered %v, want nothing: the entries are unusable", reg.Names())
	}
	sel, err := inventory.ParseSelector("env=prod")
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := store.Select(sel); !cmp.Equal(names, []string{"prod"}) {
		t.Errorf("clusters selected by env=prod: %v, want the broken prod", names)
	}
}

// TestClaimedTwiceNamesTheObjects checks that a name two sources claim is
// refused with both claiming objects named, and logged once, not again on
// every change of the source's objects, and again only after it was
// resolved and came back.
func TestClaimedTwiceNamesTheObjects(t *testing.T) {
	reg := NewRegistry(newFakeRunner(), testOptions)
	src := NewSources(reg, nil, SourcesOptions{})
	prof := cluster("prod", "https://a")
	prof.Info.Source = "ClusterProfile fleet/prod"
	argo := cluster("prod", "https://b")
	argo.Info.Source = "Argo CD cluster secret argocd/cluster-prod"
	if err := src.Set("ClusterProfiles", []Cluster{prof}, nil); err != nil {
		t.Fatal(err)
	}
	setErr := src.Set("Argo CD cluster secrets", []Cluster{argo}, nil)
	want := `cluster "prod" of Argo CD cluster secret argocd/cluster-prod (Argo CD cluster secrets): already defined by ClusterProfile fleet/prod (ClusterProfiles)`
	if setErr == nil || setErr.Error() != want {
		t.Fatalf("Set: %v\nwant: %s", setErr, want)
	}

	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	var p problemLog
	unusable := map[string]error{"east": errors.New("bad config")}
	steps := []struct {
		name     string
		invalid  map[string]error
		errs     []error
		wantLogs int
	}{
		{name: "first seen", invalid: unusable, errs: []error{setErr}, wantLogs: 2},
		{name: "the same problems after another change", invalid: unusable, errs: []error{setErr}, wantLogs: 0},
		{name: "the conflict resolved", invalid: unusable, wantLogs: 0},
		{name: "the conflict back", invalid: unusable, errs: []error{setErr}, wantLogs: 1},
	}
	for _, st := range steps {
		mu.Lock()
		lines = nil
		mu.Unlock()
		p.log(logger, st.invalid, st.errs)
		mu.Lock()
		got := lines
		mu.Unlock()
		if len(got) != st.wantLogs {
			t.Errorf("%s: logged %q, want %d lines", st.name, got, st.wantLogs)
		}
		for _, l := range got {
			if strings.Contains(l, "already defined") && (!strings.Contains(l, "argocd/cluster-prod") || !strings.Contains(l, "fleet/prod")) {
				t.Errorf("%s: %s does not name both claiming objects", st.name, l)
			}
		}
	}
}
