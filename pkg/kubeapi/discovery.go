package kubeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// discoveryContentType is the Content-Type of aggregated discovery, which
// kubectl asks for first and falls back from when a server does not offer it.
const discoveryContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// cachedTypes returns the types fleetcache caches in cluster as the member
// serves them, or answers 503 when the member's discovery cannot be read.
func (s *Server) cachedTypes(w http.ResponseWriter, r *http.Request, cluster string) ([]apiType, bool) {
	api, err := s.members.api(r.Context(), cluster)
	if err != nil {
		writeStatus(w, apierrors.NewServiceUnavailable(fmt.Sprintf("the discovery of cluster %q is not known yet: %v", cluster, err)))
		return nil, false
	}
	status, _ := s.health.Cluster(cluster)
	names := make([]string, 0, len(status.Resources))
	for _, rs := range status.Resources {
		names = append(names, rs.Resource)
	}
	return api.types(names), true
}

// serveDiscovery answers /api, /api/v1, /apis, /apis/{group} and
// /apis/{group}/{version} (path has no leading slash) with types only, aggregated (APIGroupDiscoveryList) when the client asks for it.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, types []apiType, path string) {
	parts := strings.Split(path, "/")
	accept := r.Header.Get("Accept")
	f, ok := negotiate(accept, formDiscovery)
	if !ok {
		writeStatus(w, notAcceptable(accept))
		return
	}
	w.Header().Set("Vary", "Accept")
	core := parts[0] == "api"
	if len(parts) == 1 && f.kind == formDiscovery {
		writeJSON(w, discoveryContentType, marshal(aggregated(types, core)))
		return
	}
	switch {
	case core && len(parts) == 1:
		writeJSON(w, "application/json", marshal(metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		}))
	case !core && len(parts) == 1:
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: groups(types)}
		writeJSON(w, "application/json", marshal(list))
	case !core && len(parts) == 2:
		i := slices.IndexFunc(groups(types), func(g metav1.APIGroup) bool { return g.Name == parts[1] })
		if i < 0 {
			writeStatus(w, notFound("the server could not find the requested resource"))
			return
		}
		g := groups(types)[i]
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, "application/json", marshal(g))
	default:
		gv := schema.GroupVersion{Version: parts[1]}
		if !core {
			gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		}
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
		for _, t := range types {
			if t.gv == gv {
				list.APIResources = append(list.APIResources, t.res)
			}
		}
		if list.APIResources == nil {
			writeStatus(w, notFound("the server could not find the requested resource"))
			return
		}
		writeJSON(w, "application/json", marshal(list))
	}
}

// isDiscovery reports whether path (no leading slash) is a discovery
// document: /api, /api/v1, /apis, /apis/{group}, /apis/{group}/{version}.
func isDiscovery(path string) bool {
	parts := strings.Split(path, "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// groups returns the API groups of types but the core one, each with the
// one version cached, in the member's order.
func groups(types []apiType) []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, t := range types {
		if t.gv.Group == "" || slices.ContainsFunc(out, func(g metav1.APIGroup) bool { return g.Name == t.gv.Group }) {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: t.gv.String(), Version: t.gv.Version}
		out = append(out, metav1.APIGroup{Name: t.gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

// aggregated returns the aggregated discovery of the core group (core) or of
// the others.
func aggregated(types []apiType, core bool) apidiscoveryv2.APIGroupDiscoveryList {
	list := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	for _, t := range types {
		if (t.gv.Group == "") != core {
			continue
		}
		if n := len(list.Items); n == 0 || list.Items[n-1].Name != t.gv.Group {
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{
				ObjectMeta: metav1.ObjectMeta{Name: t.gv.Group},
				Versions:   []apidiscoveryv2.APIVersionDiscovery{{Version: t.gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}},
			})
		}
		scope := apidiscoveryv2.ScopeCluster
		if t.res.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		v := &list.Items[len(list.Items)-1].Versions[0]
		v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource:         t.res.Name,
			ResponseKind:     &metav1.GroupVersionKind{Group: t.gv.Group, Version: t.gv.Version, Kind: t.res.Kind},
			Scope:            scope,
			SingularResource: t.res.SingularName,
			Verbs:            t.res.Verbs,
			ShortNames:       t.res.ShortNames,
			Categories:       t.res.Categories,
		})
	}
	return list
}

// serveVersion answers /version with the member's.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request, cluster string) {
	api, err := s.members.api(r.Context(), cluster)
	if err != nil {
		writeStatus(w, apierrors.NewServiceUnavailable(fmt.Sprintf("the version of cluster %q is not known yet: %v", cluster, err)))
		return
	}
	writeJSON(w, "application/json", api.version)
}

// serveOpenAPI answers /openapi/v2 and /openapi/v3[/…] with the member's
// documents. The /openapi/v3 index lists the cached group-versions only,
// at URLs under /clusters/{cluster}; /openapi/v2, one document for every
// type, is the member's as it is.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request, cluster, path string) {
	target := "/" + path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	doc, err := s.members.openAPI(r.Context(), cluster, target, r.Header.Get("Accept"))
	if err != nil {
		writeStatus(w, apierrors.NewServiceUnavailable(err.Error()))
		return
	}
	body := doc.body
	if path == "openapi/v3" && doc.status == http.StatusOK {
		types, ok := s.cachedTypes(w, r, cluster)
		if !ok {
			return
		}
		if body, err = openAPIIndex(body, cluster, types); err != nil {
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
	}
	if doc.contentType != "" {
		w.Header().Set("Content-Type", doc.contentType)
	}
	w.WriteHeader(doc.status)
	_, _ = w.Write(body)
}

// openAPIIndex keeps the group-versions of types in the member's /openapi/v3
// index and points them at the cluster's path.
func openAPIIndex(body []byte, cluster string, types []apiType) ([]byte, error) {
	var idx struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, fmt.Errorf("the /openapi/v3 index of cluster %q: %w", cluster, err)
	}
	for p, v := range idx.Paths {
		keep := slices.ContainsFunc(types, func(t apiType) bool {
			if t.gv.Group == "" {
				return p == "api/v1"
			}
			return p == "apis/"+t.gv.String()
		})
		if !keep {
			delete(idx.Paths, p)
			continue
		}
		if strings.HasPrefix(v.ServerRelativeURL, "/") {
			v.ServerRelativeURL = strings.TrimSuffix(PathPrefix, "/") + "/" + cluster + v.ServerRelativeURL
			idx.Paths[p] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(idx); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
