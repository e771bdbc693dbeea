package authz

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetcache/fleetcache/internal/ttlcache"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// Options configure an Authorizer. Each field's comment states its default,
// used when the field is zero; DefaultOptions returns them all.
type Options struct {
	// TTL is how long a decision is reused: a revoked right stops showing
	// objects and events within it. Default 30s.
	TTL time.Duration
	// CacheSize bounds the cached decisions. Default 100000.
	CacheSize int
	// Concurrency bounds the decisions asked at once for one request.
	// Default 16.
	Concurrency int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Authorizer caches a Decider's answers and applies them to the index.
type Authorizer struct {
	d     Decider
	opts  Options
	cache *ttlcache.Cache[string, bool]
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means. Configuration and flags that expose a field read its
// default from here.
func DefaultOptions() Options { return Options{}.withDefaults() }

// withDefaults fills in the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.TTL <= 0 {
		o.TTL = 30 * time.Second
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 100000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// New returns an Authorizer over d.
func New(d Decider, opts Options) *Authorizer {
	opts = opts.withDefaults()
	return &Authorizer{d: d, opts: opts, cache: ttlcache.New[string, bool](opts.CacheSize, opts.TTL, opts.Now)}
}

// Allowed reports whether u may list (or a.Verb) a.Resource in a.Namespace
// of a.Cluster. Failed decisions are not cached: the next request asks again.
func (az *Authorizer) Allowed(ctx context.Context, u *authn.User, a Attributes) (bool, error) {
	ok, _, err := az.allowed(ctx, u, a)
	return ok, err
}

// allowed is Allowed that also returns how long the decision holds.
func (az *Authorizer) allowed(ctx context.Context, u *authn.User, a Attributes) (bool, time.Duration, error) {
	key := cacheKey(u, a)
	if ok, left, found := az.cache.GetTTL(key); found {
		return ok, left, nil
	}
	ok, err := az.d.Decide(ctx, u, a)
	if err != nil {
		return false, 0, err
	}
	az.cache.Add(key, ok)
	return ok, az.opts.TTL, nil
}

// Visible reports whether u may see an object of resource in namespace of
// cluster: u may list the type cluster-wide, or in the object's namespace.
// It also returns how long the answer holds: until a decision it rests on
// leaves the cache, so that a caller may keep it that long and no longer.
func (az *Authorizer) Visible(ctx context.Context, u *authn.User, cluster, namespace, resource string) (bool, time.Duration, error) {
	ok, left, err := az.allowed(ctx, u, Attributes{Cluster: cluster, Resource: resource})
	if err != nil || ok || namespace == "" {
		return ok, left, err
	}
	ok, nsLeft, err := az.allowed(ctx, u, Attributes{Cluster: cluster, Namespace: namespace, Resource: resource})
	return ok, min(left, nsLeft), err
}

// cacheKey identifies a question of u. Subresource and Name come from
// request headers (impersonation) and may hold any byte: they are quoted.
func cacheKey(u *authn.User, a Attributes) string {
	return u.Key() + "\x00" + a.Cluster + "\x00" + a.Namespace + "\x00" + a.Resource + "\x00" + a.verb() + "\x00" +
		strconv.Quote(a.Subresource) + strconv.Quote(a.Name)
}

// Grant is what a caller may list of one resource type in one cluster: in
// every namespace (Namespaces nil) or in the named ones.
type Grant struct {
	Cluster    string
	Resource   string
	Namespaces []string
}

// Scope is what a caller may see of a part of the index.
type Scope struct {
	// Full is true when the caller may see all of it.
	Full bool
	// Grants are the caller's rights over it, by cluster and resource.
	Grants []Grant
	// Denied are the clusters whose decisions failed, with the first error
	// of each: all of their objects are hidden.
	Denied map[string]error
}

// NamespaceLister lists the namespaces of a cluster that hold objects; the
// index implements it.
type NamespaceLister interface {
	Namespaces(cluster string) []string
}

// Scope decides what u may see of contents, asking cluster-wide first and,
// for namespaced types denied there, namespace by namespace (those of
// contents, or all of the cluster's from namespaces when contents names
// none). Decisions run concurrently, bounded by Options.Concurrency.
func (az *Authorizer) Scope(ctx context.Context, u *authn.User, contents []views.Contents, namespaces NamespaceLister) Scope {
	d := newDecisions()
	az.each(ctx, u, clusterWide(contents), d.recordClusterWide)
	az.each(ctx, u, d.perNamespace(contents, namespaces), d.recordNamespace)
	return d.scope(contents)
}

// clusterResource is a resource type in a cluster.
type clusterResource struct{ cluster, resource string }

// decisions collects the answers a Scope is built from. The record methods
// run concurrently, as Authorizer.each calls them.
type decisions struct {
	mu sync.Mutex
	// denied holds the first error of each cluster whose decisions failed.
	denied map[string]error
	// allowed holds the cluster-wide answers.
	allowed map[clusterResource]bool
	// nsOK holds, where the cluster-wide answer is no, the namespaces
	// whose answer is yes.
	nsOK map[clusterResource][]string
}

func newDecisions() *decisions {
	return &decisions{denied: map[string]error{}, allowed: map[clusterResource]bool{}, nsOK: map[clusterResource][]string{}}
}

// clusterWide is the first question: may the caller list each type of
// contents in its whole cluster?
func clusterWide(contents []views.Contents) []Attributes {
	var wide []Attributes
	for _, c := range contents {
		for _, r := range c.Resources {
			wide = append(wide, Attributes{Cluster: c.Cluster, Resource: r.Resource})
		}
	}
	return wide
}

// fail records that a decision in cluster failed: the whole cluster is
// denied, with its first error.
func (d *decisions) fail(cluster string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.denied[cluster]; !ok {
		d.denied[cluster] = err
	}
}

// recordClusterWide records the answer to a question of clusterWide.
func (d *decisions) recordClusterWide(a Attributes, ok bool, err error) {
	if err != nil {
		d.fail(a.Cluster, err)
		return
	}
	d.mu.Lock()
	d.allowed[clusterResource{a.Cluster, a.Resource}] = ok
	d.mu.Unlock()
}

// perNamespace is the second question, once the cluster-wide answers are
// in: for each namespaced type denied cluster-wide in a cluster whose
// decisions did not fail, may the caller list it in each namespace (those
// of contents, else the cluster's from namespaces)? No record method runs
// then, so it reads the answers without the lock.
func (d *decisions) perNamespace(contents []views.Contents, namespaces NamespaceLister) []Attributes {
	var narrow []Attributes
	for _, c := range contents {
		if d.denied[c.Cluster] != nil {
			continue
		}
		nss := c.Namespaces
		for _, r := range c.Resources {
			if !r.Namespaced || d.allowed[clusterResource{c.Cluster, r.Resource}] {
				continue
			}
			if nss == nil {
				nss = namespaces.Namespaces(c.Cluster)
			}
			for _, ns := range nss {
				narrow = append(narrow, Attributes{Cluster: c.Cluster, Namespace: ns, Resource: r.Resource})
			}
		}
	}
	return narrow
}

// recordNamespace records the answer to a question of perNamespace.
func (d *decisions) recordNamespace(a Attributes, ok bool, err error) {
	switch {
	case err != nil:
		d.fail(a.Cluster, err)
	case ok:
		d.mu.Lock()
		p := clusterResource{a.Cluster, a.Resource}
		d.nsOK[p] = append(d.nsOK[p], a.Namespace)
		d.mu.Unlock()
	}
}

// scope turns the answers into the Scope of contents: a grant per type
// allowed cluster-wide or in some namespaces, none in clusters whose
// decisions failed, and Full only when nothing at all was denied.
func (d *decisions) scope(contents []views.Contents) Scope {
	s := Scope{Full: len(d.denied) == 0}
	for _, c := range contents {
		if d.denied[c.Cluster] != nil {
			continue
		}
		for _, r := range c.Resources {
			p := clusterResource{c.Cluster, r.Resource}
			switch {
			case d.allowed[p]:
				s.Grants = append(s.Grants, Grant{Cluster: c.Cluster, Resource: r.Resource})
			case len(d.nsOK[p]) > 0:
				slices.Sort(d.nsOK[p])
				s.Grants = append(s.Grants, Grant{Cluster: c.Cluster, Resource: r.Resource, Namespaces: d.nsOK[p]})
				s.Full = false
			default:
				s.Full = false
			}
		}
	}
	if len(d.denied) > 0 {
		s.Denied = d.denied
	}
	return s
}

// each decides every attribute, calling fn with each answer.
// Cached answers are read in the calling goroutine; only the decisions that
// must be asked get one.
func (az *Authorizer) each(ctx context.Context, u *authn.User, as []Attributes, fn func(Attributes, bool, error)) {
	sem := make(chan struct{}, az.opts.Concurrency)
	var wg sync.WaitGroup
	for _, a := range as {
		if ok, found := az.cache.Get(cacheKey(u, a)); found {
			fn(a, ok, nil)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ok, err := az.Allowed(ctx, u, a)
			fn(a, ok, err)
		})
	}
	wg.Wait()
}

// Filters returns the filters that select what s lets its caller see of
// what f selects: each names clusters, the granted resources and the
// granted namespaces, so that a type or cluster that appeared after the
// decisions stays hidden. Clusters with the same grants share one filter;
// every (cluster, resource) is in one filter only, so the filters are
// disjoint (see index.ListUnion). A scope with no grants yields no filters:
// nothing is visible.
func (s Scope) Filters(f planner.Filter) []planner.Filter {
	const all = "\x01all"
	// Per cluster: namespaces (joined, or all) -> granted resources.
	perCluster := map[string]map[string][]string{}
	nsOf := map[string][]string{}
	for _, g := range s.Grants {
		if f.Clusters != nil && !slices.Contains(f.Clusters, g.Cluster) {
			continue
		}
		if f.Resources != nil && !slices.Contains(f.Resources, g.Resource) {
			continue
		}
		namespaces := f.Namespaces
		if g.Namespaces != nil {
			namespaces = g.Namespaces
			if f.Namespaces != nil {
				namespaces = intersect(g.Namespaces, f.Namespaces)
			}
			if len(namespaces) == 0 {
				continue
			}
		}
		nsKey := strings.Join(namespaces, "\x00")
		if namespaces == nil {
			nsKey = all
		}
		nsOf[nsKey] = namespaces
		if perCluster[g.Cluster] == nil {
			perCluster[g.Cluster] = map[string][]string{}
		}
		perCluster[g.Cluster][nsKey] = append(perCluster[g.Cluster][nsKey], g.Resource)
	}
	// Clusters with the same namespaces and resources share a filter.
	type shape struct{ namespaces, resources string }
	clustersOf := map[shape][]string{}
	resourcesOf := map[shape][]string{}
	for _, c := range slices.Sorted(maps.Keys(perCluster)) {
		for nsKey, resources := range perCluster[c] {
			slices.Sort(resources)
			sh := shape{nsKey, strings.Join(resources, "\x00")}
			clustersOf[sh] = append(clustersOf[sh], c)
			resourcesOf[sh] = resources
		}
	}
	shapes := slices.SortedFunc(maps.Keys(clustersOf), func(a, b shape) int {
		return strings.Compare(clustersOf[a][0]+"\x00"+a.namespaces+"\x00"+a.resources, clustersOf[b][0]+"\x00"+b.namespaces+"\x00"+b.resources)
	})
	out := make([]planner.Filter, 0, len(shapes))
	for _, sh := range shapes {
		nf := f
		nf.Clusters = clustersOf[sh]
		nf.Namespaces = nsOf[sh.namespaces]
		nf.Resources = resourcesOf[sh]
		out = append(out, nf)
	}
	return out
}

// DeniedClusters returns the names of s.Denied, sorted.
func (s Scope) DeniedClusters() []string {
	return slices.Sorted(maps.Keys(s.Denied))
}

// Err joins the errors of the denied clusters.
func (s Scope) Err() error {
	var errs []error
	for _, c := range s.DeniedClusters() {
		errs = append(errs, s.Denied[c])
	}
	return errors.Join(errs...)
}

func intersect(a, b []string) []string {
	var out []string
	for _, v := range a {
		if slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}
