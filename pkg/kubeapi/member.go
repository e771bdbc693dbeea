package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// What the index does not hold is read from the member and kept for
// Options.MemberTTL: its discovery (the types it serves, their kinds, short
// names and categories), its /version, and its OpenAPI documents. Nothing
// else is ever asked of a member.

// apiType is one type fleetcache caches in a cluster, as the member serves
// it.
type apiType struct {
	gv schema.GroupVersion
	// res is the member's APIResource, with the verbs get, list and watch.
	res metav1.APIResource
	// name is the type's kubectl name, the index's resource:
	// "pods", "deployments.apps".
	name string
}

// readVerbs are the verbs fleetcache serves of every cached type.
var readVerbs = metav1.Verbs{"get", "list", "watch"}

// memberAPI is what a member serves, as read at one time.
type memberAPI struct {
	at time.Time
	// groups are the member's API groups, in its order ("" first), with
	// their preferred versions.
	groups []*metav1.APIGroup
	// resources are the member's resources per group-version.
	resources map[schema.GroupVersion][]metav1.APIResource
	version   []byte
}

// memberCache reads each member's API once per TTL.
type memberCache struct {
	configs Members
	ttl     time.Duration

	mu      sync.Mutex
	entries map[string]*memberEntry
}

type memberEntry struct {
	mu      sync.Mutex // held while the member is read
	api     *memberAPI
	openapi map[string]cachedDoc // by path, query and Accept
}

type cachedDoc struct {
	at          time.Time
	status      int
	contentType string
	body        []byte
}

func newMemberCache(configs Members, ttl time.Duration) *memberCache {
	return &memberCache{configs: configs, ttl: ttl, entries: map[string]*memberEntry{}}
}

func (m *memberCache) entry(cluster string) *memberEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[cluster]
	if e == nil {
		e = &memberEntry{openapi: map[string]cachedDoc{}}
		m.entries[cluster] = e
	}
	return e
}

// api returns what cluster serves, reading it again once it is older than
// the TTL. A failed read keeps serving the last one, if any.
func (m *memberCache) api(ctx context.Context, cluster string) (*memberAPI, error) {
	e := m.entry(cluster)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.api != nil && time.Since(e.api.at) < m.ttl {
		return e.api, nil
	}
	api, err := m.read(ctx, cluster)
	if err != nil {
		if e.api != nil {
			return e.api, nil
		}
		return nil, err
	}
	e.api = api
	return api, nil
}

func (m *memberCache) read(ctx context.Context, cluster string) (*memberAPI, error) {
	cfg, ok := m.configs.ClusterConfig(cluster)
	if !ok {
		return nil, fmt.Errorf("cluster %q is not registered", cluster)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 30 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery of cluster %q: %w", cluster, err)
	}
	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovery of cluster %q: %w", cluster, err)
	}
	api := &memberAPI{at: time.Now(), groups: groups, resources: map[schema.GroupVersion][]metav1.APIResource{}}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		api.resources[gv] = l.APIResources
	}
	version, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("version of cluster %q: %w", cluster, err)
	}
	api.version = version
	return api, nil
}

// types returns the types of api that cached names, in the member's order
// of groups and resources: each in its group's preferred version, the one
// fleetcache's informers list.
func (api *memberAPI) types(cached []string) []apiType {
	var out []apiType
	for _, g := range api.groups {
		gv := schema.GroupVersion{Group: g.Name, Version: g.PreferredVersion.Version}
		for _, res := range api.resources[gv] {
			if strings.Contains(res.Name, "/") {
				continue // a subresource
			}
			name := res.Name
			if g.Name != "" {
				name += "." + g.Name
			}
			if !slices.Contains(cached, name) {
				continue
			}
			res.Verbs = readVerbs
			res.StorageVersionHash = ""
			out = append(out, apiType{gv: gv, res: res, name: name})
		}
	}
	return out
}

// openAPI returns the member's document at path (with query), as asked with
// accept, from the cache while it is younger than the TTL.
func (m *memberCache) openAPI(ctx context.Context, cluster, pathAndQuery, accept string) (cachedDoc, error) {
	e := m.entry(cluster)
	key := pathAndQuery + "\x00" + accept
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.openapi[key]; ok && time.Since(d.at) < m.ttl {
		return d, nil
	}
	cfg, ok := m.configs.ClusterConfig(cluster)
	if !ok {
		return cachedDoc{}, fmt.Errorf("cluster %q is not registered", cluster)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return cachedDoc{}, fmt.Errorf("openapi of cluster %q: %w", cluster, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+pathAndQuery, nil)
	if err != nil {
		return cachedDoc{}, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := client.Do(req)
	if err != nil {
		return cachedDoc{}, fmt.Errorf("openapi of cluster %q: %w", cluster, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return cachedDoc{}, fmt.Errorf("openapi of cluster %q: %w", cluster, err)
	}
	d := cachedDoc{at: time.Now(), status: res.StatusCode, contentType: res.Header.Get("Content-Type"), body: body}
	if res.StatusCode == http.StatusOK {
		// Past the TTL, documents go as others are read: the cache
		// holds what clients asked for lately, no more.
		for k, old := range e.openapi {
			if time.Since(old.at) >= m.ttl {
				delete(e.openapi, k)
			}
		}
		e.openapi[key] = d
	}
	return d, nil
}

// marshal encodes v, which cannot fail for the API types encoded here.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("kubeapi: encode %T: %v", v, err))
	}
	return b
}
