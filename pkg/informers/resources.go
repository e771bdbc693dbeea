package informers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// DefaultResources are the types cached when none are configured: the
// workload, network and configuration types a portal shows. Secrets are left
// out on purpose: fleetcache should not become a copy of every credential.
var DefaultResources = []string{
	"namespaces",
	"nodes",
	"pods",
	"services",
	"configmaps",
	"serviceaccounts",
	"persistentvolumeclaims",
	"persistentvolumes",
	"deployments.apps",
	"replicasets.apps",
	"statefulsets.apps",
	"daemonsets.apps",
	"jobs.batch",
	"cronjobs.batch",
	"ingresses.networking.k8s.io",
	"customresourcedefinitions.apiextensions.k8s.io",
}

// ErrNotServed means the cluster does not serve a configured type (yet).
var ErrNotServed = errors.New("resource type not served by the cluster")

// resourceName is a configured type split the kubectl way: "deployments.apps"
// is resource "deployments" in group "apps"; "pods" is in the core group.
type resourceName struct {
	name string
	gr   schema.GroupResource
}

// ValidateResources checks configured resource type names the way NewFleet
// does, before any cluster is asked about them.
func ValidateResources(names []string) error {
	_, err := parseResourceNames(names)
	return err
}

func parseResourceNames(names []string) ([]resourceName, error) {
	seen := map[string]bool{}
	out := make([]resourceName, 0, len(names))
	for _, n := range names {
		resource, group, _ := strings.Cut(n, ".")
		if errs := validation.IsDNS1123Label(resource); len(errs) > 0 {
			return nil, fmt.Errorf("resource type %q: %s", n, strings.Join(errs, "; "))
		}
		if group != "" {
			if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 {
				return nil, fmt.Errorf("resource type %q: group: %s", n, strings.Join(errs, "; "))
			}
		}
		if seen[n] {
			return nil, fmt.Errorf("resource type %q listed twice", n)
		}
		seen[n] = true
		out = append(out, resourceName{name: n, gr: schema.GroupResource{Group: group, Resource: resource}})
	}
	return out, nil
}

// surfaces shares, across the clusters of a fleet, the resources of
// Kubernetes' own group versions per server version: clusters of one
// version serve the same built-in types, so a fleet of a thousand clusters
// asks for /api/v1 (about 25 KB) and its like once per version, not once
// per cluster. Custom and aggregated groups differ between clusters of one
// version and are always asked. A fleet holds a handful of versions, so
// the cache is not bounded.
type surfaces struct {
	mu sync.Mutex
	m  map[string]*metav1.APIResourceList // by "gitVersion groupVersion"
}

func newSurfaces() *surfaces { return &surfaces{m: map[string]*metav1.APIResourceList{}} }

// resources returns the resources of gv, from the cache when version (the
// server's gitVersion; "" when unknown) serves it built in.
func (s *surfaces) resources(d discovery.DiscoveryInterface, version, gv string, group string) (*metav1.APIResourceList, error) {
	shared := s != nil && version != "" && builtIn(group)
	key := version + " " + gv
	if shared {
		s.mu.Lock()
		list, ok := s.m[key]
		s.mu.Unlock()
		if ok {
			return list, nil
		}
	}
	list, err := d.ServerResourcesForGroupVersion(gv)
	if err != nil {
		return nil, err
	}
	if shared {
		s.mu.Lock()
		s.m[key] = list
		s.mu.Unlock()
	}
	return list, nil
}

// resolve looks the names up through discovery, in the preferred version of
// each group, reading built-in group versions from shared (nil: none). It
// returns the types found and, per name not served, an error.
func resolve(d discovery.DiscoveryInterface, shared *surfaces, names []resourceName) ([]*object.Type, map[string]error, error) {
	var version string
	if shared != nil {
		v, err := d.ServerVersion()
		if err != nil {
			return nil, nil, fmt.Errorf("discover server version: %w", err)
		}
		version = v.GitVersion
	}
	groups, err := d.ServerGroups()
	if err != nil {
		return nil, nil, fmt.Errorf("discover api groups: %w", err)
	}
	preferred := map[string]string{}
	for _, g := range groups.Groups {
		preferred[g.Name] = g.PreferredVersion.GroupVersion
	}
	var found []*object.Type
	missing := map[string]error{}
	byGV := map[string]map[string]*object.Type{}
	for _, n := range names {
		gv, ok := preferred[n.gr.Group]
		if !ok {
			missing[n.name] = fmt.Errorf("%s: api group %q: %w", n.name, n.gr.Group, ErrNotServed)
			continue
		}
		types, ok := byGV[gv]
		if !ok {
			list, err := shared.resources(d, version, gv, n.gr.Group)
			if err != nil {
				return nil, nil, fmt.Errorf("discover %s: %w", gv, err)
			}
			parsed, err := schema.ParseGroupVersion(gv)
			if err != nil {
				return nil, nil, fmt.Errorf("discover %s: %w", gv, err)
			}
			types = map[string]*object.Type{}
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
					continue // a subresource, or nothing an informer can follow
				}
				types[r.Name] = &object.Type{
					GVR:        parsed.WithResource(r.Name),
					Kind:       r.Kind,
					Namespaced: r.Namespaced,
				}
			}
			byGV[gv] = types
		}
		t, ok := types[n.gr.Resource]
		if !ok {
			missing[n.name] = fmt.Errorf("%s in %s: %w", n.name, gv, ErrNotServed)
			continue
		}
		typ := *t
		typ.Resource = n.name
		found = append(found, &typ)
	}
	return found, missing, nil
}
