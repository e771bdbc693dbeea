package kubeapi

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// A watch follows one stream (a type of a cluster) with the member's
// resourceVersions, so that a client resumes it from the last one it saw,
// as from the member:
//
//   - It starts from the stream's clock c (index.Index.Clock), read first:
//     from resourceVersion "" or "0", or with sendInitialEvents, every
//     object as ADDED (with sendInitialEvents=false and no resourceVersion,
//     none); from a resourceVersion, what changed since
//     (index.Index.Since: deletions from the tombstones, objects whose
//     resourceVersion is later), or 410 Gone where the index no longer
//     knows every deletion since.
//   - It then follows the index's feed. Every event it sends has a
//     resourceVersion at most the clock read before the feed was (each
//     change with a resourceVersion up to a clock reached the index before
//     that clock was recorded), in increasing order: a change that the
//     clock does not cover yet waits for it (a few milliseconds, the time
//     between an event and its clock). A client that resumes from the
//     last resourceVersion it saw therefore misses nothing; it may get
//     again what it already has.
//   - A DELETED event carries the object's last state with the
//     resourceVersion of the clock that saw the deletion (the index keeps
//     no deletion resourceVersion), which a resume from it never misses.
//   - Bookmarks (allowWatchBookmarks) carry the clock once everything up
//     to it was sent, at most every Options.BookmarkInterval; a streaming
//     list (sendInitialEvents) ends with the k8s.io/initial-events-end
//     bookmark.
//   - A watch that falls behind the feed's retention ends with an ERROR
//     event: 410 Expired, after which clients list again.

// watchBatch is how many feed events a watch reads at once.
const watchBatch = 1024

// clockPoll is how often a watch looks at its stream's clock while changes
// wait for it.
const clockPoll = 20 * time.Millisecond

// watchEvent is one event to send.
type watchEvent struct {
	typ string
	o   *object.Object
	rv  uint64 // the resourceVersion it is sent at
	// deleted events are sent at the clock read before the feed.
	deleted bool
}

// streamWatch is what a watch knows of one of its streams.
type streamWatch struct {
	stream index.Stream
	// sent is the resourceVersion the client has every change of the
	// stream up to.
	sent    uint64
	pending []watchEvent
}

// watcher is one watch being served: of one stream (/clusters), or of a
// type in several clusters (/fleet), whose events carry the fleet's
// resourceVersion, the vector of its streams' (fleetVersion).
type watcher struct {
	s       *Server
	req     *request
	f       form
	w       http.ResponseWriter
	flusher http.Flusher
	// streams are the watched streams, in Stream order.
	streams  []*streamWatch
	byStream map[index.Stream]*streamWatch
	fleet    bool
	matcher  *planner.Matcher
	table    bool
	headers  bool // the table's column definitions were sent
	bookmark bool
	lastMark time.Time
	buf      bytes.Buffer
}

// newWatcher returns the watcher of req's streams, with the resourceVersions
// the client has of them (sent), each 0 when absent.
func (s *Server) newWatcher(w http.ResponseWriter, req *request, f form, filter planner.Filter, streams []index.Stream, sent map[index.Stream]uint64) *watcher {
	wt := &watcher{s: s, req: req, f: f, w: w, fleet: req.cluster == "", byStream: map[index.Stream]*streamWatch{},
		matcher: planner.NewMatcher(filter), table: f.kind == formTable, bookmark: req.query.Get("allowWatchBookmarks") == "true",
		lastMark: time.Now()}
	wt.flusher, _ = w.(http.Flusher)
	for _, st := range slices.SortedFunc(slices.Values(streams), index.CompareStreams) {
		sw := &streamWatch{stream: st, sent: sent[st]}
		wt.streams = append(wt.streams, sw)
		wt.byStream[st] = sw
	}
	return wt
}

func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req *request, f form) {
	filter, err := s.filter(req)
	if err != nil {
		writeStatus(w, err)
		return
	}
	q := req.query
	asked := q.Get("resourceVersion")
	var from uint64
	if asked != "" && asked != "0" {
		n, ok := index.ParseResourceVersion(asked)
		if !ok {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", asked)))
			return
		}
		from = n
	}
	ctx, cancel := s.watchContext(r.Context(), q)
	defer cancel()
	stream := index.Stream{Cluster: req.cluster, Resource: req.typ.name}
	clock, err := s.waitClock(ctx, req, from)
	if err != nil {
		writeStatus(w, err)
		return
	}
	var resume []index.Clock
	if from > 0 && q.Get("sendInitialEvents") != "true" {
		// A resume: the client has everything up to from.
		resume = []index.Clock{{Stream: stream, RV: from}}
	}
	wt := s.newWatcher(w, req, f, filter, []index.Stream{stream}, map[index.Stream]uint64{stream: clockOf(resume, stream)})
	wt.run(ctx, resume, map[index.Stream]uint64{stream: clock}, func(err error) error {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, clock))
	})
}

// clockOf returns the resourceVersion of stream in clocks, 0 if absent.
func clockOf(clocks []index.Clock, stream index.Stream) uint64 {
	for _, c := range clocks {
		if c.Stream == stream {
			return c.RV
		}
	}
	return 0
}

// watchContext bounds a watch by its timeoutSeconds and Options.WatchTimeout.
func (s *Server) watchContext(ctx context.Context, q url.Values) (context.Context, context.CancelFunc) {
	timeout := s.opts.WatchTimeout
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 && time.Duration(t)*time.Second < timeout {
		timeout = time.Duration(t) * time.Second
	}
	return context.WithTimeout(ctx, timeout)
}

// run serves the watch: from resume (the client's clocks; none for every
// object as ADDED) with the streams' clocks read first, then the feed. gone
// turns index.ErrHistoryGone into the 410 to answer.
func (wt *watcher) run(ctx context.Context, resume []index.Clock, clocks map[index.Stream]uint64, gone func(error) error) {
	s, q := wt.s, wt.req.query
	var events []feed.Event[*object.Object]
	var after uint64
	var err error
	if len(resume) == 0 && (q.Get("resourceVersion") == "" || q.Get("resourceVersion") == "0") && q.Get("sendInitialEvents") == "false" {
		// From the present, without the objects as they are.
		after = s.ix.Revision()
	} else {
		events, after, err = s.ix.Since(resume, func(st index.Stream) bool { return wt.byStream[st] != nil }, wt.matcher.Matches)
	}
	switch {
	case errors.Is(err, index.ErrHistoryGone):
		writeStatus(wt.w, gone(err))
		return
	case err != nil:
		writeStatus(wt.w, apierrors.NewInternalError(err))
		return
	}
	wt.w.Header().Set("Content-Type", "application/json")
	wt.w.Header().Set("Cache-Control", "no-cache, private")
	wt.w.WriteHeader(http.StatusOK)
	if wt.flusher != nil {
		// The headers now, as the API server sends them: a client waits
		// for them before it goes on.
		wt.flusher.Flush()
	}
	audit.From(ctx).Started()
	for _, e := range events {
		typ := "ADDED"
		switch e.Type {
		case feed.Modified:
			typ = "MODIFIED"
		case feed.Deleted:
			typ = "DELETED"
		}
		wt.queue(typ, e.Object)
	}
	wt.release(clocks)
	if q.Get("sendInitialEvents") == "true" {
		wt.sendBookmark(clocks, true)
	}
	wt.flush()
	wt.follow(ctx, after)
}

// clocks returns the clocks of the watch's streams now (0 for a stream
// without one).
func (wt *watcher) clocks() map[index.Stream]uint64 {
	out := make(map[index.Stream]uint64, len(wt.streams))
	for _, st := range wt.streams {
		out[st.stream], _ = wt.s.ix.Clock(st.stream)
	}
	return out
}

// follow sends the feed's events of the streams after the revision after,
// until ctx ends or the feed expires.
func (wt *watcher) follow(ctx context.Context, after uint64) {
	for ctx.Err() == nil {
		clocks := wt.clocks()
		events, err := wt.s.ix.Events(after, watchBatch)
		if err != nil {
			wt.sendError(apierrors.NewResourceExpired(fmt.Sprintf("the watch fell behind what fleetcache retains: %v", err)))
			return
		}
		for _, e := range events {
			after = e.Revision
			wt.apply(e)
		}
		wt.release(clocks)
		pending, moved := false, false
		for _, st := range wt.streams {
			pending = pending || len(st.pending) > 0
			moved = moved || clocks[st.stream] > st.sent
		}
		if wt.bookmark && !pending && moved && time.Since(wt.lastMark) >= wt.s.opts.BookmarkInterval {
			wt.sendBookmark(clocks, false)
		}
		if !wt.flush() {
			return
		}
		if len(events) == watchBatch {
			continue
		}
		wait := wt.s.opts.BookmarkInterval
		if pending {
			wait = clockPoll
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_ = wt.s.ix.Wait(wctx, after)
		cancel()
	}
}

// apply queues what a feed event means for this watch: its object entering
// or leaving the watch's selection is ADDED or DELETED.
func (wt *watcher) apply(e feed.Event[*object.Object]) {
	o := e.Object
	if wt.byStream[index.Stream{Cluster: o.Cluster, Resource: o.Type.Resource}] == nil {
		return
	}
	now := wt.matcher.Matches(o)
	switch e.Type {
	case feed.Added:
		if now {
			wt.queue("ADDED", o)
		}
	case feed.Modified:
		was := e.Old != nil && wt.matcher.Matches(e.Old)
		switch {
		case now && was:
			wt.queue("MODIFIED", o)
		case now:
			wt.queue("ADDED", o)
		case was:
			wt.queue("DELETED", o)
		}
	case feed.Deleted:
		if now {
			wt.queue("DELETED", o)
		}
	}
}

// queue adds an event to the pending ones of its stream. A deletion
// supersedes the pending changes of its object.
func (wt *watcher) queue(typ string, o *object.Object) {
	st := wt.byStream[index.Stream{Cluster: o.Cluster, Resource: o.Type.Resource}]
	e := watchEvent{typ: typ, o: o, deleted: typ == "DELETED"}
	if e.deleted {
		k := o.Key()
		st.pending = slices.DeleteFunc(st.pending, func(p watchEvent) bool { return !p.deleted && p.o.Key() == k })
	} else {
		e.rv, _ = index.ParseResourceVersion(o.ResourceVersion)
	}
	st.pending = append(st.pending, e)
}

// release sends, for each stream in order of resourceVersion, the pending
// events that its clock covers: the deletions, at the clock, once it is
// past what was sent (a deletion happened after it: the clock read before
// the feed may not cover it yet, and the next read will), and the changes
// up to it.
func (wt *watcher) release(clocks map[index.Stream]uint64) {
	for _, st := range wt.streams {
		clock := clocks[st.stream]
		var ready, wait []watchEvent
		for _, e := range st.pending {
			switch {
			case e.deleted && clock > st.sent:
				e.rv = clock
				ready = append(ready, e)
			case !e.deleted && e.rv <= clock:
				ready = append(ready, e)
			default:
				wait = append(wait, e)
			}
		}
		slices.SortStableFunc(ready, func(a, b watchEvent) int { return cmp.Compare(a.rv, b.rv) })
		for _, e := range ready {
			wt.send(st, e)
		}
		st.pending = wait
	}
}

// send writes one event of st: at the stream's resourceVersion on
// /clusters, at the fleet's (the vector after it) on /fleet, where the
// object is annotated with its cluster.
func (wt *watcher) send(st *streamWatch, e watchEvent) {
	st.sent = max(st.sent, e.rv)
	rv := strconv.FormatUint(st.sent, 10)
	if wt.fleet {
		rv = wt.fleetVersion()
	}
	raw := e.o.Raw()
	if e.deleted || rv != e.o.ResourceVersion {
		raw = withResourceVersion(raw, rv)
	}
	if wt.fleet {
		raw = withCluster(raw, e.o.Cluster)
	}
	fmt.Fprintf(&wt.buf, `{"type":%q,"object":`, e.typ)
	switch {
	case wt.table:
		tw := wt.s.newTable(wt.req, wt.f)
		tw.noHeaders = wt.headers
		tw.add(e.o)
		wt.headers = true
		wt.buf.Write(bytes.TrimSuffix(tw.finish(rv, ""), []byte("\n")))
	case wt.f.kind == formMetadata:
		wt.buf.Write(partialMetadata(nil, wt.f.version, raw, ""))
	default:
		wt.buf.Write(raw)
	}
	wt.buf.WriteString("}\n")
}

// fleetVersion is the fleet's resourceVersion: the clocks the client has
// of the streams (fleetVersion in fleet.go).
func (wt *watcher) fleetVersion() string {
	clocks := make([]index.Clock, 0, len(wt.streams))
	for _, st := range wt.streams {
		if st.sent > 0 {
			clocks = append(clocks, index.Clock{Stream: st.stream, RV: st.sent})
		}
	}
	return encodeFleetVersion(clocks)
}

// sendBookmark writes a BOOKMARK at the streams' clocks.
func (wt *watcher) sendBookmark(clocks map[index.Stream]uint64, initialEnd bool) {
	for _, st := range wt.streams {
		st.sent = max(st.sent, clocks[st.stream])
	}
	rv := ""
	if wt.fleet {
		rv = wt.fleetVersion()
	} else {
		rv = strconv.FormatUint(wt.streams[0].sent, 10)
	}
	meta := metav1.ObjectMeta{ResourceVersion: rv}
	if initialEnd {
		meta.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	kind, apiVersion := wt.req.typ.res.Kind, wt.req.typ.gv.String()
	switch wt.f.kind {
	case formTable:
		kind, apiVersion = "Table", "meta.k8s.io/"+wt.f.version
	case formMetadata:
		kind, apiVersion = "PartialObjectMetadata", "meta.k8s.io/"+wt.f.version
	}
	fmt.Fprintf(&wt.buf, `{"type":"BOOKMARK","object":{"kind":%q,"apiVersion":%q,"metadata":%s}}`+"\n", kind, apiVersion, marshal(meta))
	wt.lastMark = time.Now()
}

// sendError writes an ERROR event and flushes it.
func (wt *watcher) sendError(err *apierrors.StatusError) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	fmt.Fprintf(&wt.buf, `{"type":"ERROR","object":%s}`+"\n", marshal(st))
	wt.flush()
}

// flush writes what is buffered; false when the client is gone.
func (wt *watcher) flush() bool {
	if wt.buf.Len() == 0 {
		return true
	}
	_, err := wt.w.Write(wt.buf.Bytes())
	wt.buf.Reset()
	if err != nil {
		return false
	}
	if wt.flusher != nil {
		wt.flusher.Flush()
	}
	return true
}

// withResourceVersion returns a copy of raw with metadata.resourceVersion rv.
func withResourceVersion(raw []byte, rv string) []byte {
	res := gjson.GetBytes(raw, "metadata.resourceVersion")
	if !res.Exists() || res.Index <= 0 {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(rv))
	out = append(out, raw[:res.Index]...)
	out = append(out, marshal(rv)...)
	return append(out, raw[res.Index+len(res.Raw):]...)
}
