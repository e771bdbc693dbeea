package kubeapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// request is one request for objects: get, list or watch of a type of a
// cluster, in a namespace or across them.
type request struct {
	cluster           string
	gv                schema.GroupVersion
	resource          string
	namespace, name   string
	subresource, verb string
	query             url.Values
	// typ is the cached type asked, once found.
	typ apiType
}

// parseRequest reads path (no leading slash: api/v1/namespaces/ns/pods/x)
// as the API server's request info does.
func parseRequest(cluster, path string, r *http.Request) (*request, error) {
	parts := strings.Split(path, "/")
	req := &request{cluster: cluster, query: r.URL.Query()}
	switch {
	case parts[0] == "api" && len(parts) > 2:
		req.gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case parts[0] == "apis" && len(parts) > 3:
		req.gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return nil, notFound("the server could not find the requested resource")
	}
	// namespaces/{ns}/{resource}/…, but namespaces/{name}[/status] is a
	// namespace itself.
	if parts[0] == "namespaces" && len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
		req.namespace, parts = parts[1], parts[2:]
	}
	req.resource = parts[0]
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = strings.Join(parts[2:], "/")
	}
	switch w := req.query.Get("watch"); {
	case w == "true" || w == "1":
		req.verb = "watch"
	case req.name != "":
		req.verb = "get"
	default:
		req.verb = "list"
	}
	return req, nil
}

// serveResource answers a request for objects of a cached type.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, req *request) {
	types, ok := s.cachedTypes(w, r, req.cluster)
	if !ok {
		return
	}
	found := false
	for _, t := range types {
		if t.gv == req.gv && t.res.Name == req.resource {
			req.typ, found = t, true
			break
		}
	}
	if !found || req.subresource != "" || (req.namespace != "" && !req.typ.res.Namespaced) {
		writeStatus(w, notFound("the server could not find the requested resource"))
		return
	}
	audit.From(r.Context()).Touch(req.cluster, req.typ.name)
	if !s.authorize(w, r, req, req.verb) {
		return
	}
	f, ok := negotiateObjects(w, r)
	if !ok {
		return
	}
	switch req.verb {
	case "get":
		s.serveGet(w, req, f)
	case "list":
		s.serveList(w, r, req, f)
	default:
		s.serveWatch(w, r, req, f)
	}
}

// serveGet answers a get from the index.
func (s *Server) serveGet(w http.ResponseWriter, req *request, f form) {
	o := s.ix.Get(object.Key{Cluster: req.cluster, Resource: req.typ.name, Namespace: req.namespace, Name: req.name})
	if o == nil {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: req.typ.gv.Group, Resource: req.typ.res.Name}, req.name))
		return
	}
	s.writeObject(w, req, f, o, o.Raw())
}

// writeObject answers a get with o, whose JSON is raw, in the form f.
func (s *Server) writeObject(w http.ResponseWriter, req *request, f form, o *object.Object, raw []byte) {
	switch f.kind {
	case formTable:
		tw := s.newTable(req, f)
		tw.add(o)
		writeJSON(w, "application/json", tw.finish(o.ResourceVersion, ""))
	case formMetadata:
		writeJSON(w, "application/json", partialMetadata(nil, f.version, raw, ""))
	default:
		writeJSON(w, "application/json", raw)
	}
}

// continueToken is where a list's next page starts: after Position, at the
// first page's resourceVersion.
type continueToken struct {
	RV    string          `json:"rv"`
	After object.Position `json:"after"`
}

// serveList answers a list: the objects the selectors match, in the index's
// order (namespace, then name), a page at a time, at the resourceVersion of
// the stream's clock read before the first page.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, req *request, f form) {
	filter, err := s.filter(req)
	if err != nil {
		writeStatus(w, err)
		return
	}
	s.writeList(w, req, f, filter, func() (string, error) {
		clock, err := s.listClock(r.Context(), req)
		return strconv.FormatUint(clock, 10), err
	})
}

// writeList answers a page of the list filter selects: its resourceVersion
// is rv's on the first page, the continue token's on the next ones. On the
// fleet's API (req.cluster ""), each object is annotated with its cluster
// and a Table has a Cluster column first.
func (s *Server) writeList(w http.ResponseWriter, req *request, f form, filter planner.Filter, rv func() (string, error)) {
	limit, _ := strconv.Atoi(req.query.Get("limit"))
	var version string
	var after *object.Position
	if c := req.query.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			writeStatus(w, err)
			return
		}
		version, after = tok.RV, &tok.After
	} else {
		var err error
		if version, err = rv(); err != nil {
			writeStatus(w, err)
			return
		}
	}
	page := planner.List(s.ix, filter, after, max(limit, 0))
	next := ""
	if page.More && len(page.Objects) > 0 {
		next = encodeContinue(continueToken{RV: version, After: page.Objects[len(page.Objects)-1].Position()})
	}
	// On the fleet's API, objects are annotated with their cluster.
	fleet := req.cluster == ""
	var body object.BodyReader // decodes into buffers reused from object to object
	switch f.kind {
	case formTable:
		tw := s.newTable(req, f)
		tw.expect = len(page.Objects)
		for _, o := range page.Objects {
			tw.add(o)
		}
		head, rows, tail := tw.parts(version, next)
		writeJSON(w, "application/json", head, rows, tail)
	case formMetadata:
		b := fmt.Appendf(nil, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/%s","metadata":%s,"items":[`, f.version, listMeta(version, next))
		for i, o := range page.Objects {
			if i > 0 {
				b = append(b, ',')
			}
			cluster := ""
			if fleet {
				cluster = o.Cluster
			}
			b = partialMetadata(b, f.version, body.Raw(o), cluster)
		}
		writeJSON(w, "application/json", append(b, "]}\n"...))
	default:
		b := fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, req.typ.res.Kind+"List", req.typ.gv.String(), listMeta(version, next))
		for i, o := range page.Objects {
			if i > 0 {
				b = append(b, ',')
			}
			if fleet {
				b = appendWithCluster(b, body.Raw(o), o.Cluster)
			} else {
				b = append(b, body.Raw(o)...)
			}
		}
		writeJSON(w, "application/json", append(b, "]}\n"...))
	}
}

// filter is the index filter of a list or watch: its cluster, type,
// namespace, and label and field selectors (a watch of one name selects it).
func (s *Server) filter(req *request) (planner.Filter, error) {
	f := planner.Filter{Clusters: []string{req.cluster}, Resources: []string{req.typ.name}}
	if req.namespace != "" {
		f.Namespaces = []string{req.namespace}
	}
	sel, err := parseLabels(req.query.Get("labelSelector"))
	if err != nil {
		return f, err
	}
	f.Selector = sel
	fieldText := req.query.Get("fieldSelector")
	if req.name != "" {
		fieldText = strings.Trim(fieldText+",metadata.name="+req.name, ",")
	}
	var indexed []string
	for _, p := range s.ix.IndexedPaths(req.typ.name) {
		indexed = append(indexed, p.String())
	}
	if f.Fields, err = parseFields(req.typ, fieldText, indexed); err != nil {
		return f, err
	}
	return f, nil
}

// listClock returns the resourceVersion a list answers at: its stream's
// clock, once it is at least the resourceVersion asked; with
// resourceVersionMatch=Exact, only that one.
func (s *Server) listClock(ctx context.Context, req *request) (uint64, error) {
	asked, match := req.query.Get("resourceVersion"), req.query.Get("resourceVersionMatch")
	if match != "" && asked == "" {
		return 0, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
	}
	var min uint64
	if asked != "" && asked != "0" {
		n, ok := index.ParseResourceVersion(asked)
		if !ok {
			return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", asked))
		}
		min = n
	}
	clock, err := s.waitClock(ctx, req, min)
	if err != nil {
		return 0, err
	}
	if match == string(metav1.ResourceVersionMatchExact) && clock != min {
		// The index keeps no past states to list: only the present one.
		return 0, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d): fleetcache lists only its current state", min, clock))
	}
	return clock, nil
}

// waitClock returns the clock of the request's stream once it is at least
// min, waiting up to Options.WaitTimeout for it (and for the stream's first
// list): 504 "Too large resource version" after that, as the API server
// answers, or 503 for a type still in its first list.
func (s *Server) waitClock(ctx context.Context, req *request, min uint64) (uint64, error) {
	stream := index.Stream{Cluster: req.cluster, Resource: req.typ.name}
	ctx, cancel := context.WithTimeout(ctx, s.opts.WaitTimeout)
	defer cancel()
	for {
		rev := s.ix.Revision()
		clock, ok := s.ix.Clock(stream)
		if ok && clock >= min {
			return clock, nil
		}
		// Clocks move with Progress, which records no revision: wait for
		// a change or poll briefly.
		wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err := s.ix.Wait(wctx, rev)
		wcancel()
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && ok {
				st := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", min, clock), 1)
				st.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
				return 0, st
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return 0, apierrors.NewServiceUnavailable(fmt.Sprintf("%s of cluster %q is not synced yet", req.typ.name, req.cluster))
			}
			return 0, ctx.Err()
		}
		_ = err
	}
}

func encodeContinue(t continueToken) string {
	return base64.RawURLEncoding.EncodeToString(marshal(t))
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(raw, &t)
	}
	if err != nil || t.RV == "" {
		return t, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token %q", s))
	}
	return t, nil
}

// listMeta is a list's metadata.
func listMeta(rv, next string) []byte {
	return marshal(metav1.ListMeta{ResourceVersion: rv, Continue: next})
}

// partialMetadata appends the object raw as a PartialObjectMetadata of
// meta.k8s.io's version to dst; on the fleet's API, cluster is the
// object's, which its metadata is annotated with ("" adds nothing).
func partialMetadata(dst []byte, version string, raw []byte, cluster string) []byte {
	dst = append(dst, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/`...)
	dst = append(dst, version...)
	dst = append(dst, `","metadata":`...)
	_, meta, _ := span(raw, "metadata")
	if cluster != "" && len(meta) > 0 && meta[0] == '{' {
		dst = appendMetadataWithCluster(dst, meta, cluster)
	} else {
		dst = append(dst, meta...)
	}
	return append(dst, '}')
}
