package kubeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// PathPrefix is where the Server's paths begin: /clusters/{cluster}/api/v1/….
const PathPrefix = "/clusters/"

// Authorizer decides whether a caller may use a verb on a resource type in a
// namespace ("" for cluster-wide) of a cluster; *authz.Authorizer is one.
type Authorizer interface {
	Allowed(ctx context.Context, u *authn.User, a authz.Attributes) (bool, error)
}

// Members gives the rest.Config that reaches a member cluster, for what the
// index does not hold (discovery, /version, OpenAPI); the cluster registry
// implements it.
type Members interface {
	ClusterConfig(name string) (*rest.Config, bool)
}

// Health tells which clusters are in the fleet and which types fleetcache
// caches in each; *health.Tracker implements it.
type Health interface {
	Cluster(name string) (health.ClusterStatus, bool)
	Clusters() ([]health.ClusterStatus, uint64)
}

// Inventory selects clusters by their labels; *inventory.Store implements
// it.
type Inventory interface {
	Select(sel labels.Selector) (names []string, version uint64)
}

// Options configure a Server. Each field's comment states its default, used
// when the field is zero.
type Options struct {
	// Authorizer decides each request for the verb it asks. Default nil:
	// every caller may read everything (as /graphql without authorization).
	Authorizer Authorizer
	// Inventory holds the clusters' labels, which the fleet's
	// ?clusterSelector= matches. Default nil: no cluster has labels.
	Inventory Inventory
	// Columns holds the printers of custom resource types (the informers
	// fill it), for Table output. Default: an empty table, which prints
	// custom resources by name.
	Columns *columns.Types
	// MemberTTL is how long what is read from a member (its discovery,
	// /version and OpenAPI documents) is reused. Default 5 minutes.
	MemberTTL time.Duration
	// WaitTimeout bounds how long a request for a resourceVersion the
	// index has not reached yet waits for it, before it answers 504 "Too
	// large resource version" (as the API server does). Default 5 seconds.
	WaitTimeout time.Duration
	// WatchTimeout is the longest a watch runs before it ends (clients
	// then resume it), when the request sets no shorter timeoutSeconds.
	// Default 30 minutes (the API server's --min-request-timeout is half
	// of it, randomized up to it).
	WatchTimeout time.Duration
	// BookmarkInterval is how often a watch that allows bookmarks sends one
	// when its stream's clock moved. Default 30 seconds.
	BookmarkInterval time.Duration
	// Logger receives the server's log lines. Default klog.Background().
	Logger klog.Logger
}

// DefaultOptions returns the Options with every default filled in.
func DefaultOptions() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	if o.Columns == nil {
		o.Columns = new(columns.Types)
	}
	if o.MemberTTL <= 0 {
		o.MemberTTL = 5 * time.Minute
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 5 * time.Second
	}
	if o.WatchTimeout <= 0 {
		o.WatchTimeout = 30 * time.Minute
	}
	if o.BookmarkInterval <= 0 {
		o.BookmarkInterval = 30 * time.Second
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	return o
}

// Server serves the members' Kubernetes APIs from the index, at
// /clusters/{cluster}/….
type Server struct {
	ix      *index.Index
	health  Health
	members *memberCache
	opts    Options
}

// New returns a Server over ix, which reads the fleet's clusters and their
// cached types from h and what the index does not hold from members.
func New(ix *index.Index, members Members, h Health, opts Options) *Server {
	opts = opts.withDefaults()
	return &Server{ix: ix, health: h, members: newMemberCache(members, opts.MemberTTL), opts: opts}
}

// ServeHTTP answers a request under PathPrefix or FleetPrefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if path, ok := strings.CutPrefix(r.URL.Path, FleetPrefix); ok {
		s.serveFleet(w, r, strings.Trim(path, "/"))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	if !ok {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
		return
	}
	cluster, path, _ := strings.Cut(rest, "/")
	status, ok := s.health.Cluster(cluster)
	if !ok || status.Unconfigured {
		writeStatus(w, notFound(fmt.Sprintf("cluster %q is not in the fleet", cluster)))
		return
	}
	path = strings.Trim(path, "/")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.refuseWrite(w, r, cluster, status)
		return
	}
	switch {
	case path == "version":
		s.serveVersion(w, r, cluster)
	case isDiscovery(path):
		if types, ok := s.cachedTypes(w, r, cluster); ok {
			s.serveDiscovery(w, r, types, path)
		}
	case path == "openapi/v2" || path == "openapi/v3" || strings.HasPrefix(path, "openapi/v3/"):
		s.serveOpenAPI(w, r, cluster, path)
	default:
		req, err := parseRequest(cluster, path, r)
		if err != nil {
			writeStatus(w, err)
			return
		}
		auditRequest(r, req)
		s.serveResource(w, r, req)
	}
}

// refuseWrite answers a write: 405 with a Status that says where to write.
func (s *Server) refuseWrite(w http.ResponseWriter, r *http.Request, cluster string, status health.ClusterStatus) {
	where := "the member cluster's API server"
	if status.Server != "" {
		where += " (" + status.Server + ")"
	} else if cfg, ok := s.members.configs.ClusterConfig(cluster); ok && cfg.Host != "" {
		where += " (" + cfg.Host + ")"
	}
	writeStatus(w, methodNotAllowed(fmt.Sprintf("%s %s: fleetcache is a read-only cache of cluster %q; write to %s",
		r.Method, r.URL.Path, cluster, where)))
}

// methodNotAllowed is a 405 with msg.
func methodNotAllowed(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed, Message: msg,
	}}
}

// authorize checks that the caller may use verb on the request's type in its
// namespace, and answers 403 as the API server does when not.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, req *request, verb string) bool {
	if s.opts.Authorizer == nil {
		return true
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		// Authorization without authentication: nobody to decide for.
		writeStatus(w, apierrors.NewUnauthorized("no authenticated caller"))
		return false
	}
	ok, err := s.opts.Authorizer.Allowed(r.Context(), u, authz.Attributes{
		Cluster: req.cluster, Namespace: req.namespace, Resource: req.typ.name, Verb: verb,
	})
	if err != nil {
		s.opts.Logger.Info("Authorization failed", "cluster", req.cluster, "resource", req.typ.name, "err", err)
	}
	ev := audit.From(r.Context())
	if ok {
		ev.Decide(true, "")
		return true
	}
	ev.Deny(req.cluster)
	scope := "at the cluster scope"
	if req.namespace != "" {
		scope = fmt.Sprintf("in the namespace %q", req.namespace)
	}
	// The API server's words, capitalized as it writes them.
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q %s", u.Name, verb, req.typ.res.Name, req.typ.gv.Group, scope)
	if err != nil {
		msg += fmt.Sprintf(": the decision failed in cluster %q", req.cluster)
	}
	reason := errors.New(msg)
	ev.Decide(false, msg)
	writeStatus(w, apierrors.NewForbidden(schema.GroupResource{Group: req.typ.gv.Group, Resource: req.typ.res.Name}, req.name, reason))
	return false
}

// writeStatus answers with err as a metav1.Status: its own for an API
// error, 500 for any other.
func writeStatus(w http.ResponseWriter, err error) {
	var st metav1.Status
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		st = apiStatus.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	body, mErr := json.Marshal(st)
	if mErr != nil {
		http.Error(w, mErr.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

// notFound is the API server's 404 for a path it does not serve.
func notFound(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: msg,
	}}
}

// writeJSON answers 200 with body, JSON of contentType, written part after
// part (a large list is not copied into one piece).
func writeJSON(w http.ResponseWriter, contentType string, body ...[]byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	for _, b := range body {
		if _, err := w.Write(b); err != nil {
			return
		}
	}
}

// auditRequest records in r's audit event what req reads.
func auditRequest(r *http.Request, req *request) {
	audit.From(r.Context()).SetResource(req.verb, audit.ObjectRef{
		Resource: req.resource, Namespace: req.namespace, Name: req.name, Subresource: req.subresource,
		APIGroup: req.gv.Group, APIVersion: req.gv.Version,
	}, req.cluster)
}
