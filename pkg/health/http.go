package health

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// Checker is one health check: it returns nil when healthy, else why not.
// Checks are plain functions, as in controller-runtime's healthz package.
type Checker func(*http.Request) error

// Ping is the Checker that passes whenever the process serves HTTP.
func Ping(*http.Request) error { return nil }

// Check is a Checker with the name that the output shows and that
// ?exclude= and the single-check path name.
type Check struct {
	Name  string
	Check Checker
}

// Handler serves a set of checks the way kube-apiserver serves /healthz and
// /readyz:
//
//   - "ok" with 200 when every check passes;
//   - 500 with one line per check ("[+]ping ok", "[-]cluster:c1 failed:
//     SYNCING: …") and "readyz check failed" when one fails;
//   - ?verbose lists the checks on success too, ending with "readyz check
//     passed";
//   - ?exclude=NAME (repeatable) skips a check; a name that matches none is
//     reported in a warning line;
//   - ServeCheck serves one check alone, for /readyz/NAME.
//
// Unlike Kubernetes, a failed check shows its reason rather than "reason
// withheld": here the reasons are sync states that the status page and the
// GraphQL API serve to the same clients anyway.
type Handler struct {
	name   string
	checks func() []Check
}

// NewHandler returns a Handler whose output ends with "<name> check passed"
// or "<name> check failed" and which runs, on each request, the checks that
// checks returns then (clusters come and go between requests).
func NewHandler(name string, checks func() []Check) *Handler {
	return &Handler{name: name, checks: checks}
}

// Healthz returns the handler of /healthz: the process is alive when it
// answers, so its only check is "ping".
func Healthz() *Handler {
	return NewHandler("healthz", func() []Check { return []Check{{Name: "ping", Check: Ping}} })
}

// ReadyzOptions configure Readyz.
type ReadyzOptions struct {
	// Exclude names clusters whose initial sync does not count: they get no
	// check. Default: none, every registered cluster counts.
	Exclude []string
	// Disabled makes /readyz pass whenever the process serves, with "ping"
	// as its only check, e.g. to receive traffic while clusters sync.
	// Default false.
	Disabled bool
	// Checks are run before the clusters' (not when Disabled), e.g. the
	// warm start's load of the snapshot. Default: none.
	Checks []Check
}

// ClusterCheckPrefix starts the name of a cluster's readiness check:
// "cluster:c1".
const ClusterCheckPrefix = "cluster:"

// Readyz returns the handler of /readyz: "ping", opts.Checks, and for each cluster that
// t tracks (less opts.Exclude, and less clusters whose registration is
// unusable, which do not run) a check named ClusterCheckPrefix+name that
// passes once the cluster has passed its initial sync (see
// InitialSyncError). Clusters registered while the process runs get their
// check from the next request on.
func Readyz(t *Tracker, opts ReadyzOptions) *Handler {
	return NewHandler("readyz", func() []Check {
		checks := []Check{{Name: "ping", Check: Ping}}
		if opts.Disabled {
			return checks
		}
		checks = append(checks, opts.Checks...)
		// One snapshot per request: each check reports the state read here.
		statuses, _ := t.Clusters()
		for _, s := range statuses {
			// A cluster whose registration is unusable does not run: it
			// shows its error, but one bad Secret must not take the
			// service out of rotation.
			if slices.Contains(opts.Exclude, s.Name) || s.Unconfigured {
				continue
			}
			checks = append(checks, Check{Name: ClusterCheckPrefix + s.Name, Check: func(*http.Request) error { return InitialSyncError(s) }})
		}
		return checks
	})
}

// ErrInitialSync is wrapped by the errors of InitialSyncError.
var ErrInitialSync = errors.New("initial sync not done")

// InitialSyncError returns nil if the cluster has passed its initial sync:
// it is SYNCED or DEGRADED, or each of its resource types has completed an
// initial list once or fails with an API error (forbidden, not served, sync
// deadline). A cluster whose API server became unreachable after syncing
// therefore stays ready: it serves its last known objects, marked stale. A
// cluster that is PENDING, SYNCING, or DISCONNECTED before its types have
// synced, is not ready; nor is one while a type added later (a CRD that
// appeared) makes its first list, bounded by the sync deadline.
func InitialSyncError(s ClusterStatus) error {
	if s.Status == Synced || s.Status == Degraded {
		return nil
	}
	done := len(s.Resources) > 0
	for _, r := range s.Resources {
		done = done && (!r.LastSyncTime.IsZero() || r.Status == Degraded)
	}
	if done {
		return nil
	}
	if s.Message == "" {
		return fmt.Errorf("%w: %s", ErrInitialSync, s.Status)
	}
	return fmt.Errorf("%w: %s: %s", ErrInitialSync, s.Status, s.Message)
}

// ServeHTTP runs every check, less those named by ?exclude=, and writes the
// result (see Handler).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	verbose := q.Has("verbose")
	excluded := q["exclude"]
	matched := make([]bool, len(excluded))

	var out bytes.Buffer
	var failed []string
	for _, c := range h.checks() {
		if i := slices.Index(excluded, c.Name); i >= 0 {
			matched[i] = true
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
			continue
		}
		if err := c.Check(r); err != nil {
			failed = append(failed, c.Name)
			fmt.Fprintf(&out, "[-]%s failed: %s\n", c.Name, oneLine(err.Error()))
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
	}
	var unmatched []string
	for i, name := range excluded {
		if !matched[i] {
			unmatched = append(unmatched, strconv.Quote(name))
		}
	}
	if len(unmatched) > 0 {
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(unmatched, ","))
	}

	setTextHeaders(w)
	if len(failed) > 0 {
		klog.FromContext(r.Context()).V(1).Info("Health check failed", "endpoint", h.name, "failed", failed)
		fmt.Fprintf(&out, "%s check failed\n", h.name)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(out.Bytes())
		return
	}
	if !verbose {
		_, _ = w.Write([]byte("ok"))
		return
	}
	fmt.Fprintf(&out, "%s check passed\n", h.name)
	_, _ = w.Write(out.Bytes())
}

// ServeCheck runs the check called name alone: "ok" with 200, its error
// with 500, or 404 if there is no such check.
func (h *Handler) ServeCheck(w http.ResponseWriter, r *http.Request, name string) {
	checks := h.checks()
	i := slices.IndexFunc(checks, func(c Check) bool { return c.Name == name })
	setTextHeaders(w)
	if i < 0 {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "no %s check named %q\n", h.name, name)
		return
	}
	if err := checks[i].Check(r); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "internal server error: %s\n", oneLine(err.Error()))
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func setTextHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
}

// oneLine keeps a check's reason on its line of the output.
func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }
