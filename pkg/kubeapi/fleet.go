package kubeapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/graphql/cursor"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// The fleet's API, /fleet/api/v1/… and /fleet/apis/…, serves a type across
// every cluster that caches it and that the caller may read it in (or
// those of them whose labels ?clusterSelector= matches):
//
//   - list: the objects in the index's order (cluster, namespace, name),
//     each annotated with its cluster (ClusterAnnotation), a Table with a
//     Cluster column first;
//   - watch: the events of every cluster's stream, each object annotated
//     and carrying the fleet's resourceVersion after it, bookmarks and
//     streaming lists as on /clusters (watch.go);
//   - get: the object of that name in the first cluster, by name, that
//     has it, the others that have one named in a Warning header.
//
// The fleet's resourceVersion is the vector of its streams' clocks (cluster
// → the member's resourceVersion of the type), encoded as the GraphQL API's
// revision cursors are (package cursor, without an epoch: the clocks are
// the members', so any replica resumes from them, as index.Index.Since
// does). A list's is read before its first page; a watch from one resumes
// every stream it names, and sends every object of the clusters it does
// not name (one that joined since) as ADDED. A list ignores the
// resourceVersion asked. Clusters the caller may not read the type in are
// left out, each named in a Warning header (kubectl prints them).

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
	clusters, err := s.selectClusters(req, where[req.typ.name])
	if err != nil {
		writeStatus(w, err)
		return
	}
	f, ok := negotiateObjects(w, r)
	if !ok {
		return
	}
	allowed := s.fleetAllowed(w, r, req, clusters)
	if allowed == nil {
		return
	}
	filter, err := s.filter(req)
	if err != nil {
		writeStatus(w, err)
		return
	}
	filter.Clusters = allowed
	if len(allowed) == 0 {
		filter.Clusters = []string{""} // no cluster: nil would be every one
	}
	switch req.verb {
	case "get":
		s.serveFleetGet(w, req, f, allowed)
	case "watch":
		s.serveFleetWatch(w, r, req, f, filter, allowed)
	default:
		s.writeList(w, req, f, filter, func() (string, error) {
			var clocks []index.Clock
			for _, c := range allowed {
				st := index.Stream{Cluster: c, Resource: req.typ.name}
				if rv, ok := s.ix.Clock(st); ok {
					clocks = append(clocks, index.Clock{Stream: st, RV: rv})
				}
			}
			return encodeFleetVersion(clocks), nil
		})
	}
}

// selectClusters returns the clusters among those that cache the type
// whose labels the request's clusterSelector matches (all of them without
// one).
func (s *Server) selectClusters(req *request, clusters []string) ([]string, error) {
	text := req.query.Get("clusterSelector")
	if text == "" {
		return clusters, nil
	}
	sel, err := inventory.ParseSelector(text)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var matching []string
	if s.opts.Inventory != nil {
		matching, _ = s.opts.Inventory.Select(sel)
	} else if sel.Matches(labels.Set{}) {
		matching = clusters
	}
	return slices.DeleteFunc(slices.Clone(clusters), func(c string) bool { return !slices.Contains(matching, c) }), nil
}

// serveFleetGet answers a get: the object in the first of clusters (by
// name) that has it, annotated; the others that have one are named in a
// Warning header.
func (s *Server) serveFleetGet(w http.ResponseWriter, req *request, f form, clusters []string) {
	var found *object.Object
	var also []string
	for _, c := range clusters {
		o := s.ix.Get(object.Key{Cluster: c, Resource: req.typ.name, Namespace: req.namespace, Name: req.name})
		switch {
		case o == nil:
		case found == nil:
			found = o
		default:
			also = append(also, c)
		}
	}
	if found == nil {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: req.typ.gv.Group, Resource: req.typ.res.Name}, req.name))
		return
	}
	if len(also) > 0 {
		warn(w, fmt.Sprintf("fleetcache: %q is also in cluster %s: this is cluster %s's; read the others at %s{cluster} or narrow with ?clusterSelector=",
			req.name, strings.Join(also, ", "), found.Cluster, PathPrefix))
	}
	s.writeObject(w, req, f, found, withCluster(found.Raw(), found.Cluster))
}

// serveFleetWatch answers a watch across clusters (see watch.go): from the
// fleet's resourceVersion asked, each stream it names resumes; the others
// start with their objects as ADDED.
func (s *Server) serveFleetWatch(w http.ResponseWriter, r *http.Request, req *request, f form, filter planner.Filter, clusters []string) {
	q := req.query
	var resume []index.Clock
	streams := make([]index.Stream, len(clusters))
	for i, c := range clusters {
		streams[i] = index.Stream{Cluster: c, Resource: req.typ.name}
	}
	asked := q.Get("resourceVersion")
	if asked != "" && asked != "0" && q.Get("sendInitialEvents") != "true" {
		clocks, err := decodeFleetVersion(asked)
		if err != nil {
			writeStatus(w, err)
			return
		}
		for _, c := range clocks {
			if slices.Contains(streams, c.Stream) {
				resume = append(resume, c)
			}
		}
	}
	sent := map[index.Stream]uint64{}
	for _, c := range resume {
		sent[c.Stream] = c.RV
	}
	ctx, cancel := s.watchContext(r.Context(), q)
	defer cancel()
	// Every stream the client names must have reached its clock: wait
	// for a replica that is behind, as a cluster's watch does.
	clocks, err := s.waitClocks(ctx, resume, streams)
	if err != nil {
		writeStatus(w, err)
		return
	}
	wt := s.newWatcher(w, req, f, filter, streams, sent)
	wt.run(ctx, resume, clocks, func(err error) error {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %v", err))
	})
}

// waitClocks returns the clocks of streams once each is at least the
// client's (resume), waiting up to Options.WaitTimeout: 504 "Too large
// resource version" after that, as a cluster's watch answers.
func (s *Server) waitClocks(ctx context.Context, resume []index.Clock, streams []index.Stream) (map[index.Stream]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.WaitTimeout)
	defer cancel()
	for {
		rev := s.ix.Revision()
		clocks := make(map[index.Stream]uint64, len(streams))
		for _, st := range streams {
			clocks[st], _ = s.ix.Clock(st)
		}
		behind := ""
		for _, c := range resume {
			if clocks[c.Stream] < c.RV {
				behind = fmt.Sprintf("%s at %d, current: %d", c.Stream, c.RV, clocks[c.Stream])
			}
		}
		if behind == "" {
			return clocks, nil
		}
		wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_ = s.ix.Wait(wctx, rev)
		wcancel()
		if ctx.Err() != nil {
			st := apierrors.NewTimeoutError("Too large resource version: "+behind, 1)
			st.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
			return nil, st
		}
	}
}

// encodeFleetVersion is the fleet's resourceVersion of clocks.
func encodeFleetVersion(clocks []index.Clock) string {
	return cursor.EncodeRevision(cursor.Revision{Clocks: clocks})
}

// decodeFleetVersion returns the clocks of a fleet's resourceVersion, or
// 400.
func decodeFleetVersion(rv string) ([]index.Clock, error) {
	r, err := cursor.DecodeRevision(rv)
	if err != nil || r.Epoch != "" || r.Revision != 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q: not a resourceVersion of fleetcache's /fleet", rv))
	}
	return r.Clocks, nil
}

// warn adds a Warning header that kubectl prints.
func warn(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", fmt.Sprintf(`299 - %s`, strconv.Quote(msg)))
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
				t.res.Verbs = metav1.Verbs{"get", "list", "watch"}
				out = append(out, t)
			}
			where[t.name] = append(where[t.name], c.Name)
		}
	}
	slices.SortStableFunc(out, func(a, b apiType) int { return strings.Compare(a.gv.Group, b.gv.Group) })
	return out, where
}

// fleetAllowed returns the clusters among clusters where the caller may
// use the request's verb on its type (in its namespace), naming the others
// in Warning headers; with none allowed it answers 403 and returns nil.
func (s *Server) fleetAllowed(w http.ResponseWriter, r *http.Request, req *request, clusters []string) []string {
	if s.opts.Authorizer == nil || len(clusters) == 0 {
		// None selected is an empty answer, not a refusal.
		return append([]string{}, clusters...)
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		writeStatus(w, apierrors.NewUnauthorized("no authenticated caller"))
		return nil
	}
	allowed := []string{}
	ev := audit.From(r.Context())
	for _, c := range clusters {
		ok, err := s.opts.Authorizer.Allowed(r.Context(), u, authz.Attributes{Cluster: c, Namespace: req.namespace, Resource: req.typ.name, Verb: req.verb})
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
		warn(w, fmt.Sprintf("fleetcache: cluster %s left out: %s", c, why))
	}
	ev.Decide(len(allowed) > 0, "")
	if len(allowed) == 0 {
		msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q in any cluster", u.Name, req.verb, req.typ.res.Name, req.typ.gv.Group)
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
	return appendWithCluster(make([]byte, 0, len(raw)+len(ClusterAnnotation)+len(cluster)+24), raw, cluster)
}

// appendWithCluster appends raw, annotated with its cluster, to dst: raw
// as it is when its metadata is not an object.
func appendWithCluster(dst, raw []byte, cluster string) []byte {
	at, meta, ok := span(raw, "metadata")
	if !ok || meta[0] != '{' {
		return append(dst, raw...)
	}
	dst = append(dst, raw[:at]...)
	dst = appendMetadataWithCluster(dst, meta, cluster)
	return append(dst, raw[at+len(meta):]...)
}

// appendMetadataWithCluster appends meta, an object's metadata (a JSON
// object), to dst with the cluster annotation first among its annotations,
// or as its first member, "annotations", when it has none.
func appendMetadataWithCluster(dst, meta []byte, cluster string) []byte {
	at, object := 0, meta // the brace the annotation follows, and the object it opens
	if a, ann, ok := span(meta, "annotations"); ok && ann[0] == '{' {
		at, object = a, ann
	}
	dst = append(dst, meta[:at+1]...)
	if at == 0 {
		dst = append(dst, `"annotations":{`...)
	}
	dst = appendJSONString(dst, ClusterAnnotation)
	dst = append(dst, ':')
	dst = appendJSONString(dst, cluster)
	if at == 0 {
		dst = append(dst, '}')
	}
	if len(bytes.TrimSpace(object)) > 2 { // not {}: members follow
		dst = append(dst, ',')
	}
	return append(dst, meta[at+1:]...)
}
