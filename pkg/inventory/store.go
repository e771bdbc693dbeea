package inventory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
)

// Info is what the inventory says about one cluster.
type Info struct {
	// Labels are the cluster's labels: those of its source object (a
	// ClusterProfile's, a Secret's without the source's marker labels)
	// overlaid with the configured ones. Never nil in what Store returns.
	Labels map[string]string
	// Source names where the cluster came from: "ClusterProfile
	// fleet/prod-eu", "kubeconfig file /etc/fleet/config".
	Source string
	// ControlPlaneHealthy is the source's own view of the cluster's control
	// plane (a ClusterProfile's ControlPlaneHealthy condition); nil when
	// the source says nothing.
	ControlPlaneHealthy *bool
	// ControlPlaneMessage is the condition's reason and message.
	ControlPlaneMessage string
}

// Equal reports whether i and o say the same; nil and empty Labels are
// alike.
func (i Info) Equal(o Info) bool {
	return maps.Equal(i.Labels, o.Labels) && i.Source == o.Source &&
		(i.ControlPlaneHealthy == nil) == (o.ControlPlaneHealthy == nil) &&
		(i.ControlPlaneHealthy == nil || *i.ControlPlaneHealthy == *o.ControlPlaneHealthy) &&
		i.ControlPlaneMessage == o.ControlPlaneMessage
}

// Store holds the Info of every registered cluster. Its methods are safe
// for concurrent use. The zero value is not usable: call NewStore.
type Store struct {
	mu       sync.RWMutex
	clusters map[string]Info
	version  uint64
	// changed ends with the Set that changes something; cancel ends it.
	changed context.Context
	cancel  context.CancelFunc
}

// NewStore returns an empty Store.
func NewStore() *Store {
	s := &Store{clusters: map[string]Info{}}
	s.changed, s.cancel = context.WithCancel(context.Background())
	return s
}

// Set replaces the whole inventory: all maps every registered cluster to
// its Info. A Set that changes nothing wakes no watcher.
func (s *Store) Set(all map[string]Info) {
	next := make(map[string]Info, len(all))
	for name, info := range all {
		info.Labels = maps.Clone(info.Labels)
		if info.Labels == nil {
			info.Labels = map[string]string{}
		}
		next[name] = info
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if maps.EqualFunc(s.clusters, next, Info.Equal) {
		return
	}
	s.clusters = next
	s.version++
	// Ending the context runs no watcher's code here: context.AfterFunc
	// runs its function in a goroutine of its own.
	s.cancel()
	s.changed, s.cancel = context.WithCancel(context.Background())
}

// Get returns the named cluster's Info, and whether the store holds it.
// The caller must not modify its Labels.
func (s *Store) Get(name string) (Info, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.clusters[name]
	return i, ok
}

// Watch returns the store's version and a context that ends when a later
// Set changes something: a watcher waits on its Done channel, or ties
// another context to it with context.AfterFunc.
func (s *Store) Watch() (version uint64, changed context.Context) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version, s.changed
}

// Select returns, sorted, the clusters whose labels sel matches, and the
// store's version they were read at.
func (s *Store) Select(sel labels.Selector) (names []string, version uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for name, i := range s.clusters {
		if sel.Matches(labels.Set(i.Labels)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, s.version
}

// ParseSelector parses a cluster selector: a Kubernetes label selector over
// the clusters' labels ("env=prod,region in (eu,us),!canary").
func ParseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("invalid cluster selector %q: %w", s, err)
	}
	return sel, nil
}

// Narrow returns, sorted, the clusters among names (every cluster the
// store holds when names is nil) whose labels sel matches, and the store's
// version they were read at. Names the store does not hold are left out.
func (s *Store) Narrow(names []string, sel labels.Selector) ([]string, uint64) {
	if names == nil {
		return s.Select(sel)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, name := range names {
		if i, ok := s.clusters[name]; ok && sel.Matches(labels.Set(i.Labels)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), s.version
}

// CountByLabel sums counts by cluster name into counts by the value of the
// clusters' label key. Clusters without the label, or not held, are not
// counted.
func (s *Store) CountByLabel(counts map[string]int, key string) map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]int{}
	for name, n := range counts {
		if v, ok := s.clusters[name].Labels[key]; ok {
			out[v] += n
		}
	}
	return out
}
