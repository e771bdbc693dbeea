package clusters

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// ConfigReporter is told about clusters that a source names but cannot build
// a configuration for, such as a Secret with a malformed kubeconfig. The
// health tracker implements it, so that such a cluster shows its error.
type ConfigReporter interface {
	// ConfigError records err for the named cluster; a nil err means the
	// cluster's configuration is usable again, or the cluster is gone.
	ConfigError(cluster string, err error)
}

// InventorySink takes what the inventory says about every registered
// cluster; *inventory.Store implements it.
type InventorySink interface {
	Set(all map[string]inventory.Info)
}

// SourcesOptions configures Sources. The zero value is ready to use.
type SourcesOptions struct {
	// Inventory receives, after every change, the Info of each registered
	// cluster: its source's labels overlaid with Labels. Default nil:
	// published nowhere.
	Inventory InventorySink
	// Labels are configured labels by cluster name; they are added to, and
	// win over, the labels the cluster's source gives it. Names that no
	// source registers are ignored. Default none.
	Labels map[string]map[string]string
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
	opts     SourcesOptions

	// mu serializes Set calls, so that the registry and the inventory see
	// the lists in the order they were set. Neither calls back into
	// Sources, so holding it across those calls cannot deadlock.
	mu       sync.Mutex
	good     map[string]map[string]Cluster // source -> name -> last good cluster
	invalid  map[string]map[string]error   // source -> name -> why it is unusable
	owner    map[string]string             // cluster name -> source that claimed it first
	reported map[string]bool               // names with a config error reported
}

// NewSources returns Sources that register into reg and report configuration
// errors to reporter (which may be nil).
func NewSources(reg *Registry, reporter ConfigReporter, opts SourcesOptions) *Sources {
	return &Sources{
		reg:      reg,
		reporter: reporter,
		opts:     opts,
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
	// This source first, then the others; each once, so that a name this
	// source cannot take is refused once.
	order := []string{source}
	for _, src := range slices.Sorted(maps.Keys(s.good)) {
		if src != source {
			order = append(order, src)
		}
	}
	for _, src := range order {
		for _, name := range s.namesLocked(src) {
			owner, owned := s.owner[name]
			switch {
			case !owned:
				s.owner[name] = src
			case owner != src && src == source:
				errs = append(errs, fmt.Errorf("cluster %q of %s: already defined by %s", name, s.entryLocked(src, name), s.entryLocked(owner, name)))
			}
		}
	}

	var union []Cluster
	info := map[string]inventory.Info{}
	for _, name := range slices.Sorted(maps.Keys(s.owner)) {
		src := s.owner[name]
		c, ok := s.good[src][name]
		if ok {
			union = append(union, c)
		}
		// An entry that cannot be used still shows its labels and source
		// (those it says now, not its last good configuration's), so that
		// a portal filtering clusters by label does not hide it.
		var ee *entryError
		switch {
		case errors.As(s.invalid[src][name], &ee):
			info[name] = s.infoOf(src, Cluster{Name: name, Info: ee.info})
		case ok:
			info[name] = s.infoOf(src, c)
		default:
			info[name] = s.infoOf(src, Cluster{Name: name})
		}
	}
	if err := s.reg.Set(union); err != nil {
		errs = append(errs, err)
	}
	s.reportLocked()
	if s.opts.Inventory != nil {
		s.opts.Inventory.Set(info)
	}
	return errors.Join(errs...)
}

// infoOf returns what the inventory shows of c, registered by source: its
// source's labels overlaid with the configured ones.
func (s *Sources) infoOf(source string, c Cluster) inventory.Info {
	info := c.Info
	if info.Source == "" {
		info.Source = source
	}
	if conf := s.opts.Labels[c.Name]; len(conf) > 0 {
		info.Labels = maps.Clone(info.Labels)
		if info.Labels == nil {
			info.Labels = map[string]string{}
		}
		maps.Copy(info.Labels, conf)
	}
	return info
}

// entryLocked names the entry of source that names the cluster: the object
// it comes from when known ("ClusterProfile fleet/prod (ClusterProfiles in
// every namespace)"), else the source.
func (s *Sources) entryLocked(source, name string) string {
	what := ""
	var ee *entryError
	if c, ok := s.good[source][name]; ok {
		what = c.Info.Source
	} else if errors.As(s.invalid[source][name], &ee) {
		what = ee.info.Source
	}
	if what == "" || what == source {
		return source
	}
	return what + " (" + source + ")"
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
