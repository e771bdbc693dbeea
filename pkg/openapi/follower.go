package openapi

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Option defaults.
const (
	defaultInterval = 10 * time.Second
	defaultTimeout  = 30 * time.Second
)

// Options configure a Follower. Each field's comment states its default,
// used when the field is zero.
type Options struct {
	// Interval is how often each cluster's /openapi/v3 root is read: a
	// CRD added, changed or removed reaches the schema within about that
	// long. Default 10s, as informers.Options.DiscoveryRetry (the
	// aggregator's --openapi-interval).
	Interval time.Duration
	// Timeout bounds each request. Default 30s: a group-version's
	// document is large (core/v1: about 1.5 MB).
	Timeout time.Duration
}

// DefaultOptions returns the options a zero Options stands for, for
// configuration and flags to show.
func DefaultOptions() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = defaultInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	return o
}

// Document is the schemas of one group-version's OpenAPI v3 document, as
// one URL (which holds its hash) serves it. It is shared and must not be
// modified.
type Document struct {
	// URL is the server-relative URL it was read from, with its hash.
	URL string
	// Schemas are its components' schemas, by name.
	Schemas map[string]*spec.Schema
	// kinds maps group/version/kind to the component of that kind.
	kinds map[string]string
}

// Resolve returns the schema a reference ("#/components/schemas/<name>")
// names, or nil.
func (d *Document) Resolve(ref string) *spec.Schema {
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok {
		return nil
	}
	return d.Schemas[name]
}

// Served is one version of a kind as clusters serve it: the same document.
type Served struct {
	Version string
	Doc     *Document
	// Schema is the kind's component in Doc.
	Schema string
	// Clusters serve it, sorted.
	Clusters []string
}

// Kind is a cached kind and the versions of it the fleet serves.
type Kind struct {
	Group, Kind string
	// Resource is the kubectl resource name of its type (object.Type.Resource).
	Resource   string
	Namespaced bool
	// Versions are sorted by version, then by document URL.
	Versions []Served
}

// Snapshot is what the fleet serves: its cached kinds, sorted by group and
// kind. It is shared and must not be modified.
type Snapshot struct {
	Kinds []Kind
}

// kindKey names a kind in the fleet.
type kindKey struct{ group, kind string }

// clusterKind is a kind as one cluster serves it.
type clusterKind struct {
	version, resource string
	namespaced        bool
	doc               *Document
	schema            string
}

// Follower follows the schemas of the kinds the fleet caches; see the
// package documentation. It is safe for concurrent use.
type Follower struct {
	opts Options

	mu       sync.Mutex
	clusters map[string]map[kindKey]clusterKind
	// docs holds the decoded documents by URL, while a cluster uses them.
	docs map[string]*Document
	// fetches reads each URL once at a time: a fleet of one Kubernetes
	// version starting at once would read core/v1 once per cluster.
	fetches singleflight.Group
	version uint64
	// key is fleetKeyLocked's at version.
	key string
	// changed is closed at the next change.
	changed chan struct{}
	snap    *Snapshot
}

// New returns a Follower that follows no cluster yet.
func New(opts Options) *Follower {
	return &Follower{opts: opts.withDefaults(), clusters: map[string]map[kindKey]clusterKind{},
		docs: map[string]*Document{}, changed: make(chan struct{})}
}

// Watch returns the current version and a channel closed at the next
// change: of the kinds the fleet serves, their versions or their documents
// (not of which clusters serve them).
func (f *Follower) Watch() (uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.changed
}

// Snapshot returns what the fleet serves now, and its version.
func (f *Follower) Snapshot() (*Snapshot, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snap == nil {
		f.snap = f.snapshotLocked()
	}
	return f.snap, f.version
}

func (f *Follower) snapshotLocked() *Snapshot {
	kinds := map[kindKey]*Kind{}
	for cluster, ks := range f.clusters {
		for k, ck := range ks {
			kind := kinds[k]
			if kind == nil {
				kind = &Kind{Group: k.group, Kind: k.kind, Resource: ck.resource, Namespaced: ck.namespaced}
				kinds[k] = kind
			}
			i := slices.IndexFunc(kind.Versions, func(s Served) bool { return s.Version == ck.version && s.Doc == ck.doc })
			if i < 0 {
				kind.Versions = append(kind.Versions, Served{Version: ck.version, Doc: ck.doc, Schema: ck.schema})
				i = len(kind.Versions) - 1
			}
			kind.Versions[i].Clusters = append(kind.Versions[i].Clusters, cluster)
		}
	}
	s := &Snapshot{Kinds: make([]Kind, 0, len(kinds))}
	for _, k := range kinds {
		for i := range k.Versions {
			slices.Sort(k.Versions[i].Clusters)
		}
		slices.SortFunc(k.Versions, func(a, b Served) int {
			return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Doc.URL, b.Doc.URL))
		})
		s.Kinds = append(s.Kinds, *k)
	}
	slices.SortFunc(s.Kinds, func(a, b Kind) int { return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind)) })
	return s
}

// Follow follows the schemas of the types cluster caches (types returns
// them, as they change) through client, a REST client of the cluster,
// until ctx ends; then the cluster's kinds leave the snapshot. A cluster
// followed twice at once is followed by the later call.
func (f *Follower) Follow(ctx context.Context, cluster string, client rest.Interface, types func() []*object.Type) {
	logger := klog.FromContext(ctx).WithValues("cluster", cluster)
	defer f.set(cluster, nil)
	t := time.NewTicker(f.opts.Interval)
	defer t.Stop()
	for {
		if err := f.poll(ctx, cluster, client, types()); err != nil && ctx.Err() == nil {
			logger.V(2).Info("Reading the OpenAPI schemas failed, will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poll reads the cluster's OpenAPI root and the documents of its types
// that changed, and records the kinds' schemas.
func (f *Follower) poll(ctx context.Context, cluster string, client rest.Interface, types []*object.Type) error {
	root, err := f.get(ctx, client, "/openapi/v3")
	if err != nil {
		return fmt.Errorf("read /openapi/v3: %w", err)
	}
	var paths struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(root, &paths); err != nil {
		return fmt.Errorf("decode /openapi/v3: %w", err)
	}
	kinds := map[kindKey]clusterKind{}
	var firstErr error
	for _, t := range types {
		gv := "api/" + t.GVR.Version
		if t.GVR.Group != "" {
			gv = "apis/" + t.GVR.Group + "/" + t.GVR.Version
		}
		p, ok := paths.Paths[gv]
		if !ok {
			continue // not served (any more)
		}
		doc, err := f.document(ctx, client, p.ServerRelativeURL)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			// Keep what the cluster served before, if anything.
			f.mu.Lock()
			if ck, ok := f.clusters[cluster][kindKey{t.GVR.Group, t.Kind}]; ok {
				kinds[kindKey{t.GVR.Group, t.Kind}] = ck
			}
			f.mu.Unlock()
			continue
		}
		name, ok := doc.kinds[t.GVR.Group+"/"+t.GVR.Version+"/"+t.Kind]
		if !ok {
			continue
		}
		kinds[kindKey{t.GVR.Group, t.Kind}] = clusterKind{version: t.GVR.Version, resource: t.Resource,
			namespaced: t.Namespaced, doc: doc, schema: name}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f.set(cluster, kinds)
	return firstErr
}

// get reads path (an absolute path, or a server-relative URL with its
// query) from the cluster.
func (f *Follower) get(ctx context.Context, client rest.Interface, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	return client.Get().RequestURI(path).SetHeader("Accept", "application/json").Do(ctx).Raw()
}

// document returns the document at url, decoded once for every cluster.
func (f *Follower) document(ctx context.Context, client rest.Interface, url string) (*Document, error) {
	f.mu.Lock()
	d, ok := f.docs[url]
	f.mu.Unlock()
	if ok {
		return d, nil
	}
	v, err, _ := f.fetches.Do(url, func() (any, error) {
		raw, err := f.get(ctx, client, url)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", url, err)
		}
		d, err := Decode(url, raw)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if prev, ok := f.docs[url]; ok {
			return prev, nil // another cluster's poll was first
		}
		f.docs[url] = d
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Document), nil
}

// Decode decodes a group-version's OpenAPI v3 document served at url: its
// components' schemas, and which of them are kinds.
func Decode(url string, raw []byte) (*Document, error) {
	var doc struct {
		Components struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decode %s: %w", url, err)
	}
	d := &Document{URL: url, Schemas: doc.Components.Schemas, kinds: map[string]string{}}
	for name, s := range d.Schemas {
		var gvks []struct{ Group, Version, Kind string }
		if s == nil || s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks) != nil {
			continue
		}
		for _, gvk := range gvks {
			// Several components may name a kind: the first by name,
			// whatever the map's order.
			key := gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
			if prev, ok := d.kinds[key]; !ok || prev > name {
				d.kinds[key] = name
			}
		}
	}
	return d, nil
}

// set records the kinds a cluster serves (nil: the cluster is no longer
// followed), and signals a change.
func (f *Follower) set(cluster string, kinds map[kindKey]clusterKind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, had := f.clusters[cluster]
	if kinds == nil {
		if !had {
			return
		}
		delete(f.clusters, cluster)
	} else {
		if had && equalKinds(old, kinds) {
			return
		}
		f.clusters[cluster] = kinds
	}
	// Drop the documents the cluster used that no cluster uses any more
	// (not those read for clusters whose kinds are not recorded yet).
	used := map[*Document]bool{}
	for _, ks := range f.clusters {
		for _, ck := range ks {
			used[ck.doc] = true
		}
	}
	for _, ck := range old {
		if !used[ck.doc] {
			delete(f.docs, ck.doc.URL)
		}
	}
	f.snap = nil
	// A change is what changes the fleet's versions and documents; a
	// cluster that serves what others serve changes nothing to signal.
	if key := f.fleetKeyLocked(); key != f.key {
		f.key = key
		f.version++
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// fleetKeyLocked returns a text that the fleet's kinds, their versions
// and documents make, whichever clusters serve them.
func (f *Follower) fleetKeyLocked() string {
	seen := map[string]bool{}
	for _, ks := range f.clusters {
		for k, ck := range ks {
			seen[k.group+"/"+k.kind+"/"+ck.resource+"/"+ck.version+"/"+ck.doc.URL+"/"+ck.schema] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}

func equalKinds(a, b map[kindKey]clusterKind) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
