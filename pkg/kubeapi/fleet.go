package kubeapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// The fleet's API, /fleet/api/v1/… and /fleet/apis/…, lists a type across
// every cluster that caches it and that the caller may list it in: the
// objects in the index's order (cluster, namespace, name), each annotated
// with its cluster (ClusterAnnotation), a Table with a Cluster column
// first. Its resourceVersion is the vector of the streams' clocks (cluster
// → the member's resourceVersion of the type), read before the first page,
// for the watch across clusters that is to come; a list ignores the
// resourceVersion asked. Clusters the caller may not list the type in are
// left out, each named in a Warning header (kubectl prints them). get and
// watch are served per cluster, under /clusters/{cluster}.

// FleetPrefix is where the fleet's API begins: /fleet/api/v1/….
const FleetPrefix = "/fleet/"

// ClusterAnnotation names, on each object of the fleet's API, its cluster.
const ClusterAnnotation = "fleetcache.io/cluster"

// serveFleet answers a request under FleetPrefix (path without it).
func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, methodNotAllowed(fmt.Sprintf("%s %s: fleetcache is a read-only cache; write to each member cluster's API server", r.Method, r.URL.Path)))
		return
	}
	types, where := s.fleetTypes(r)
	if isDiscovery(path) {
		s.serveDiscovery(w, r, types, path)
		return
	}
	req, err := parseRequest("", path, r)
	if err != nil {
		writeStatus(w, err)
		return
	}
	auditRequest(r, req)
	i := slices.IndexFunc(types, func(t apiType) bool { return t.gv == req.gv && t.res.Name == req.resource })
	if i < 0 || req.subresource != "" || (req.namespace != "" && !types[i].res.Namespaced) {
		writeStatus(w, notFound("the server could not find the requested resource"))
		return
	}
	req.typ = types[i]
	if req.verb != "list" {
		writeStatus(w, methodNotAllowed(fmt.Sprintf("fleetcache serves list across clusters at %s; %s one cluster's objects at %s{cluster}", FleetPrefix, req.verb, PathPrefix)))
		return
	}
	f, ok := negotiateObjects(w, r)
	if !ok {
		return
	}
	allowed := s.fleetAllowed(w, r, req, where[req.typ.name])
	if allowed == nil {
		return
	}
	filter, err := s.filter(req)
	if err != nil {
		writeStatus(w, err)
		return
	}
	filter.Clusters = allowed
	s.writeList(w, req, f, filter, func() (string, error) {
		var b strings.Builder
		for _, c := range allowed {
			if rv, ok := s.ix.Clock(index.Stream{Cluster: c, Resource: req.typ.name}); ok {
				fmt.Fprintf(&b, "%s=%d,", c, rv)
			}
		}
		return base64.RawURLEncoding.EncodeToString([]byte(strings.TrimSuffix(b.String(), ","))), nil
	})
}

// fleetTypes returns the types cached in any cluster, as the first cluster
// (by name) that caches each serves it, with the verb list only, and the
// clusters that cache each, by kubectl name.
func (s *Server) fleetTypes(r *http.Request) ([]apiType, map[string][]string) {
	clusters, _ := s.health.Clusters()
	slices.SortFunc(clusters, func(a, b health.ClusterStatus) int { return strings.Compare(a.Name, b.Name) })
	var out []apiType
	where := map[string][]string{}
	for _, c := range clusters {
		if c.Unconfigured {
			continue
		}
		api, err := s.members.api(r.Context(), c.Name)
		if err != nil {
			continue
		}
		var names []string
		for _, rs := range c.Resources {
			names = append(names, rs.Resource)
		}
		for _, t := range api.types(names) {
			if len(where[t.name]) == 0 {
				t.res.Verbs = metav1.Verbs{"list"}
				out = append(out, t)
			}
			where[t.name] = append(where[t.name], c.Name)
		}
	}
	slices.SortStableFunc(out, func(a, b apiType) int { return strings.Compare(a.gv.Group, b.gv.Group) })
	return out, where
}

// fleetAllowed returns the clusters among clusters where the caller may
// list the request's type (in its namespace), naming the others in Warning
// headers; with none allowed it answers 403 and returns nil.
func (s *Server) fleetAllowed(w http.ResponseWriter, r *http.Request, req *request, clusters []string) []string {
	if s.opts.Authorizer == nil {
		return clusters
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		writeStatus(w, apierrors.NewUnauthorized("no authenticated caller"))
		return nil
	}
	allowed := []string{}
	ev := audit.From(r.Context())
	for _, c := range clusters {
		ok, err := s.opts.Authorizer.Allowed(r.Context(), u, authz.Attributes{Cluster: c, Namespace: req.namespace, Resource: req.typ.name, Verb: "list"})
		if ok {
			ev.Touch(c, req.typ.name)
			allowed = append(allowed, c)
			continue
		}
		ev.Deny(c)
		why := "forbidden"
		if err != nil {
			why = "the decision failed"
		}
		w.Header().Add("Warning", fmt.Sprintf(`299 - %s`, strconv.Quote(fmt.Sprintf("fleetcache: cluster %s left out: %s", c, why))))
	}
	ev.Decide(len(allowed) > 0, "")
	if len(allowed) == 0 {
		msg := fmt.Sprintf("User %q cannot list resource %q in API group %q in any cluster", u.Name, req.typ.res.Name, req.typ.gv.Group)
		writeStatus(w, apierrors.NewForbidden(schema.GroupResource{Group: req.typ.gv.Group, Resource: req.typ.res.Name}, "", errorString(msg)))
		return nil
	}
	return allowed
}

// errorString is an error of a message written as the API server writes it.
type errorString string

func (e errorString) Error() string { return string(e) }

// withCluster returns a copy of raw annotated with its cluster
// (ClusterAnnotation), as kubectl fleet -o json annotates objects.
func withCluster(raw []byte, cluster string) []byte {
	member := append(marshal(ClusterAnnotation), ':')
	member = append(member, marshal(cluster)...)
	if ann := gjson.GetBytes(raw, "metadata.annotations"); ann.IsObject() && ann.Index > 0 {
		return insertAfterBrace(raw, ann.Index, member, strings.TrimSpace(ann.Raw) != "{}")
	}
	meta := gjson.GetBytes(raw, "metadata")
	if !meta.IsObject() || meta.Index <= 0 {
		return raw
	}
	annotations := append([]byte(`"annotations":{`), member...)
	annotations = append(annotations, '}')
	return insertAfterBrace(raw, meta.Index, annotations, strings.TrimSpace(meta.Raw) != "{}")
}

// insertAfterBrace inserts member after the '{' at raw[at], with a comma
// when the object has members already.
func insertAfterBrace(raw []byte, at int, member []byte, comma bool) []byte {
	out := make([]byte, 0, len(raw)+len(member)+1)
	out = append(out, raw[:at+1]...)
	out = append(out, member...)
	if comma {
		out = append(out, ',')
	}
	return append(out, raw[at+1:]...)
}
