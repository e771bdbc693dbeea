package fleetctl

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// kindRef is a type fleetcache caches, as the filter and the output name
// it.
type kindRef struct {
	// filter is the kind as ResourceFilter.kinds takes it: "Pod",
	// "Deployment.apps".
	filter string
	// resource is the kubectl resource name: "pods", "deployments.apps".
	resource string
	// shared says another group caches a kind of the same name, so a
	// filter on the bare kind also selects those: rows are kept by
	// resource.
	shared bool
}

// shortNames are kubectl's short names of the built-in kinds (discovery
// has them; fleetcache's API does not serve discovery).
var shortNames = map[string]string{
	"po": "pods", "svc": "services", "ns": "namespaces", "no": "nodes", "cm": "configmaps", "ev": "events",
	"sa": "serviceaccounts", "pv": "persistentvolumes", "pvc": "persistentvolumeclaims", "ep": "endpoints",
	"deploy": "deployments.apps", "rs": "replicasets.apps", "ds": "daemonsets.apps", "sts": "statefulsets.apps",
	"cj": "cronjobs.batch", "ing": "ingresses.networking.k8s.io", "netpol": "networkpolicies.networking.k8s.io",
	"crd": "customresourcedefinitions.apiextensions.k8s.io", "pdb": "poddisruptionbudgets.policy",
	"hpa": "horizontalpodautoscalers.autoscaling", "sc": "storageclasses.storage.k8s.io",
}

// resolveKind finds the cached type the user's name means, as kubectl
// does: a resource ("pods", "deployments.apps"), a kind ("Pod", "pod",
// "deployment.apps"), or a short name ("po", "deploy"). A name that two
// groups share picks the core group, else it must name the group.
func resolveKind(ctx context.Context, c *Client, name string) (kindRef, error) {
	var got struct {
		Clusters []struct {
			Resources []struct{ Kind, Resource string }
		}
	}
	if err := c.Query(ctx, `{ clusters { resources { kind resource } } }`, nil, &got); err != nil {
		return kindRef{}, err
	}
	kinds := map[string]kindRef{} // by resource
	byKind := map[string]int{}
	for _, cl := range got.Clusters {
		for _, r := range cl.Resources {
			if _, ok := kinds[r.Resource]; ok {
				continue
			}
			// ResourceSync.kind is the kind as filters name it
			// ("Deployment.apps"); the bare kind is before the group.
			k := kindRef{filter: r.Kind, resource: r.Resource}
			kinds[r.Resource] = k
			bare, _, _ := strings.Cut(r.Kind, ".")
			byKind[bare]++
		}
	}
	want := strings.ToLower(name)
	if full, ok := shortNames[want]; ok {
		want = full
	}
	var matches []kindRef
	for _, k := range kinds {
		plural, _, _ := strings.Cut(k.resource, ".")
		kind, _, _ := strings.Cut(k.filter, ".")
		if slices.Contains([]string{k.resource, strings.ToLower(k.filter), plural, strings.ToLower(kind)}, want) {
			k.shared = byKind[kind] > 1
			matches = append(matches, k)
		}
	}
	switch {
	case len(matches) == 0:
		var names []string
		for r := range kinds {
			names = append(names, r)
		}
		slices.Sort(names)
		return kindRef{}, fmt.Errorf("the server doesn't have a resource type %q (fleetcache caches %s)", name, strings.Join(names, ", "))
	case len(matches) == 1:
		return matches[0], nil
	}
	// An exact resource name wins, then the core group.
	for _, k := range matches {
		if k.resource == want || strings.ToLower(k.filter) == want {
			return k, nil
		}
	}
	for _, k := range matches {
		if !strings.Contains(k.resource, ".") {
			return k, nil
		}
	}
	var names []string
	for _, k := range matches {
		names = append(names, k.resource)
	}
	slices.Sort(names)
	return kindRef{}, fmt.Errorf("%q is ambiguous: name the group, one of %s", name, strings.Join(names, ", "))
}
