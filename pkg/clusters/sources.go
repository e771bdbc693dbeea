package clusters

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// ConfigReporter is told about clusters that a source names but cannot build
// a configuration for, such as a Secret with a malformed kubeconfig. The
// health tracker implements it, so that such a cluster shows its error.
type ConfigReporter interface {
	// ConfigError records err for the named cluster; a nil err means the
	// cluster's configuration is usable again, or the cluster is gone.
	ConfigError(cluster string, err error)
}

// Sources merges the clusters that several sources name (kubeconfig files, a
// kubeconfig directory, cluster Secrets) into one Registry. Each source
// states its whole current list with Set; Sources registers the union.
//
// Two rules keep a bad change from spreading:
//   - A cluster that a source still names but can no longer configure (a
//     Secret whose kubeconfig was broken by an edit) keeps running with its
//     last good configuration, and its error goes to the ConfigReporter.
//   - A name that two sources claim stays with the source that named it
//     first; the other source's entry is reported as an error.
type Sources struct {
	reg      *Registry
	reporter ConfigReporter

	// mu serializes Set calls, so that the registry sees the lists in the
	// order they were set. Neither the registry nor the reporter call back
	// into Sources, so holding it across those calls cannot deadlock.
	mu       sync.Mutex
	good     map[string]map[string]Cluster // source -> name -> last good cluster
	invalid  map[string]map[string]error   // source -> name -> why it is unusable
	owner    map[string]string             // cluster name -> source that claimed it first
	reported map[string]bool               // names with a config error reported
}

// NewSources returns Sources that register into reg and report configuration
// errors to reporter (which may be nil).
func NewSources(reg *Registry, reporter ConfigReporter) *Sources {
	return &Sources{
		reg:      reg,
		reporter: reporter,
		good:     map[string]map[string]Cluster{},
		invalid:  map[string]map[string]error{},
		owner:    map[string]string{},
		reported: map[string]bool{},
	}
}

// Set replaces the list of one source: cs are its usable clusters, invalid
// maps the names of clusters it names but cannot configure to the reason.
// Set returns an error joining one error per cluster that could not be
// registered (a name claimed by another source, or one the registry rejects);
// the rest of the list is registered regardless.
func (s *Sources) Set(source string, cs []Cluster, invalid map[string]error) error {
	s.mu.Lock()
	defer s.mu.Unlock()

	var errs []error
	good := make(map[string]Cluster, len(cs))
	for _, c := range cs {
		good[c.Name] = c
	}
	bad := maps.Clone(invalid)
	for name := range bad {
		if last, ok := s.good[source][name]; ok {
			good[name] = last // keep running on the last good configuration
		}
	}
	s.good[source] = good
	s.invalid[source] = bad

	// Release the names that this source no longer names; then let every
	// source, this one first, claim the names nobody owns.
	for name, src := range s.owner {
		if src != source {
			continue
		}
		_, isGood := good[name]
		_, isBad := bad[name]
		if !isGood && !isBad {
			delete(s.owner, name)
		}
	}
	for _, src := range append([]string{source}, slices.Sorted(maps.Keys(s.good))...) {
		for _, name := range s.namesLocked(src) {
			owner, owned := s.owner[name]
			switch {
			case !owned:
				s.owner[name] = src
			case owner != src && src == source:
				errs = append(errs, fmt.Errorf("cluster %q from %s: already defined by %s", name, source, owner))
			}
		}
	}

	var union []Cluster
	for _, name := range slices.Sorted(maps.Keys(s.owner)) {
		if c, ok := s.good[s.owner[name]][name]; ok {
			union = append(union, c)
		}
	}
	if err := s.reg.Set(union); err != nil {
		errs = append(errs, err)
	}
	s.reportLocked()
	return errors.Join(errs...)
}

// namesLocked returns the sorted names that source names, usable or not.
func (s *Sources) namesLocked(source string) []string {
	names := slices.Collect(maps.Keys(s.good[source]))
	for name := range s.invalid[source] {
		if _, ok := s.good[source][name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// reportLocked tells the reporter about every configuration error of a
// claimed name, and clears those that are resolved.
func (s *Sources) reportLocked() {
	if s.reporter == nil {
		return
	}
	now := map[string]error{}
	for name, src := range s.owner {
		if err, ok := s.invalid[src][name]; ok {
			now[name] = err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.reported)) {
		if _, still := now[name]; !still {
			s.reporter.ConfigError(name, nil)
			delete(s.reported, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		s.reporter.ConfigError(name, now[name])
		s.reported[name] = true
	}
}
