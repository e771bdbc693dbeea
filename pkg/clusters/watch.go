package clusters

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// registration is what one inventory object (a Secret, a ClusterProfile)
// registers: a cluster, or the error that keeps it from doing so. name is
// set either way when the object names a cluster, so that the error shows
// on that cluster.
type registration struct {
	key     string // namespace/name of the object, for errors and order
	name    string
	cluster Cluster
	err     error
	// info is what the object says of its cluster (labels, source), set
	// whether or not it is usable: a broken entry keeps its labels and
	// source in the inventory.
	info inventory.Info
}

// entryError is the error of an entry that names a cluster but cannot
// configure it, with what the entry says of the cluster, so that Sources
// shows the entry's labels and source for it.
type entryError struct {
	err  error
	info inventory.Info
}

func (e *entryError) Error() string { return e.err.Error() }
func (e *entryError) Unwrap() error { return e.err }

// collect turns the registrations of one source into its usable clusters
// and its errors by cluster name. When two objects name the same cluster,
// the first by namespace/name registers it and the other is an error in
// dups: "fleet-a/prod" wins over "fleet-b/prod", whatever came first, so
// that the winner does not depend on the order of events. A registration
// without a name registers nothing; its error, if any, goes to dups
// (there is no cluster to show it on).
func collect(what string, regs []registration) (cs []Cluster, invalid map[string]error, dups []error) {
	slices.SortFunc(regs, func(a, b registration) int { return strings.Compare(a.key, b.key) })
	invalid = map[string]error{}
	from := map[string]string{}
	for _, r := range regs {
		if r.name == "" {
			if r.err != nil {
				dups = append(dups, r.err)
			}
			continue
		}
		if first, dup := from[r.name]; dup {
			dups = append(dups, fmt.Errorf("%s %s: cluster %q already defined by %s %s", what, r.key, r.name, what, first))
			continue
		}
		from[r.name] = r.key
		if r.err != nil {
			invalid[r.name] = &entryError{err: r.err, info: r.info}
			continue
		}
		cs = append(cs, r.cluster)
	}
	return cs, invalid, dups
}

// follow runs informer (started by start) until ctx ends and, once it has
// synced and again after each burst of changes, reads its store into
// registrations with read and sets the result in sink under source. A
// burst of changes costs one Set once it has been read.
func follow(ctx context.Context, source, what string, informer cache.SharedIndexInformer, start func(stop <-chan struct{}),
	read func(objs []any) []registration, sink SetSink) error {
	logger := klog.FromContext(ctx).WithValues("source", source)
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return fmt.Errorf("watch %s: %w", source, err)
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx ended
	}
	notify() // an empty list is still set once
	var problems problemLog
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		cs, invalid, dups := collect(what, read(informer.GetStore().List()))
		problems.log(logger, invalid, append(dups, flatten(sink.Set(source, cs, invalid))...))
	}
}

// problemLog logs the problems of a source's entries (unusable entries,
// clusters not registered) once each, when they appear, not again on every
// change of the source's objects; a problem that goes away and comes back
// is logged again.
type problemLog struct {
	logged map[string]bool // the problems of the last call
}

// log logs the problems not logged by the last call: invalid by cluster
// name, and errs.
func (p *problemLog) log(logger klog.Logger, invalid map[string]error, errs []error) {
	now := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(invalid)) {
		key := "unusable " + name + ": " + invalid[name].Error()
		now[key] = true
		if !p.logged[key] {
			logger.Error(invalid[name], "Cluster registration not usable", "cluster", name)
		}
	}
	for _, err := range errs {
		key := "not registered: " + err.Error()
		if !now[key] && !p.logged[key] {
			logger.Error(err, "Cluster not registered")
		}
		now[key] = true
	}
	p.logged = now
}

// flatten returns the errors that err joins (errors.Join), err alone if it
// joins none, nothing for nil.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// withoutKeys returns labels without the given keys (a source's own marker
// labels), nil when nothing is left.
func withoutKeys(labels map[string]string, keys ...string) map[string]string {
	out := maps.Clone(labels)
	for _, k := range keys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
