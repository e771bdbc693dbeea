package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// Level is how much an event records.
type Level string

// The levels, as kube-apiserver's audit policy names them. fleetcache has
// no Request and RequestResponse levels: it never records bodies.
const (
	// LevelNone records nothing.
	LevelNone Level = "None"
	// LevelMetadata records who asked what, the decision and the status.
	LevelMetadata Level = "Metadata"
)

// The stages at which an event is written, as kube-apiserver names them.
const (
	// StageResponseStarted: a long request's response began (a watch's
	// first event, a subscription's stream); the event is written again
	// when it ends.
	StageResponseStarted = "ResponseStarted"
	// StageResponseComplete: the response is complete.
	StageResponseComplete = "ResponseComplete"
	// StagePanic: the handler panicked.
	StagePanic = "Panic"
)

// Annotations that fleetcache writes, besides kube-apiserver's
// authorization.k8s.io/decision and authorization.k8s.io/reason.
const (
	AnnotationDecision      = "authorization.k8s.io/decision"
	AnnotationReason        = "authorization.k8s.io/reason"
	AnnotationHTTPMethod    = "fleetcache.io/http-method"
	AnnotationLatency       = "fleetcache.io/latency-seconds"
	AnnotationClusters      = "fleetcache.io/clusters"
	AnnotationResources     = "fleetcache.io/resources"
	AnnotationDenied        = "fleetcache.io/denied-clusters"
	AnnotationOperationName = "fleetcache.io/graphql-operation-name"
	AnnotationOperationType = "fleetcache.io/graphql-operation-type"
	AnnotationErrors        = "fleetcache.io/graphql-errors"
	AnnotationConnection    = "fleetcache.io/connection-audit-id"
)

// Options configure a Log. Each field's comment states its default, used
// when the field is zero; DefaultOptions returns them all.
type Options struct {
	// Level is what each event records. Default LevelMetadata: setting
	// Path is asking for a log, as kube-apiserver users set
	// --audit-log-path with a policy at Metadata.
	Level Level
	// Path is the file events are appended to (created 0600), "-" for
	// standard output. Default "": no audit log, whatever Level says.
	Path string
	// Stdout is where Path "-" writes. Default os.Stdout.
	Stdout io.Writer
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultOptions returns the Options with every default filled in: what a
// zero Options means. Configuration and flags read their defaults here.
func DefaultOptions() Options { return Options{}.withDefaults() }

func (o Options) withDefaults() Options {
	if o.Level == "" {
		o.Level = LevelMetadata
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// ParseLevel returns the Level named s (None or Metadata, in any case).
func ParseLevel(s string) (Level, error) {
	for _, l := range []Level{LevelNone, LevelMetadata} {
		if strings.EqualFold(s, string(l)) {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown audit level %q: use %s or %s", s, LevelNone, LevelMetadata)
}

// Log writes audit events, one JSON line each. It is safe for concurrent
// use; a nil *Log writes nothing.
type Log struct {
	opts Options
	mu   sync.Mutex
	w    io.Writer
	file *os.File
}

// New opens the log that opts describe: one that writes nothing when
// opts.Path is empty or opts.Level is LevelNone.
func New(opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if _, err := ParseLevel(string(opts.Level)); err != nil {
		return nil, err
	}
	l := &Log{opts: opts}
	switch {
	case opts.Path == "" || opts.Level == LevelNone:
	case opts.Path == "-":
		l.w = opts.Stdout
	default:
		f, err := os.OpenFile(opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open audit log: %w", err)
		}
		l.w, l.file = f, f
	}
	return l, nil
}

// Enabled reports whether l writes events.
func (l *Log) Enabled() bool { return l != nil && l.w != nil }

// Close closes the log's file, if it has one.
func (l *Log) Close() error {
	if l == nil || l.file == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w = io.Discard
	return l.file.Close()
}

// write writes one event's line. Writes are synchronous, as
// kube-apiserver's blocking log backend's: a line is on its way to the
// file before the response ends.
func (l *Log) write(rec *record) {
	line, err := json.Marshal(rec)
	if err != nil {
		return // a record of strings and numbers always encodes
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(line)
}

// UserInfo is a user as an event records it.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

func userInfo(u *authn.User) UserInfo {
	return UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// ObjectRef is what a Kubernetes API request reads.
type ObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// responseStatus is the response's status, as kube-apiserver records it.
type responseStatus struct {
	Metadata struct{} `json:"metadata"`
	Code     int      `json:"code"`
}

// record is an event as written: audit.k8s.io/v1 Event's fields.
type record struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    Level             `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     UserInfo          `json:"user"`
	ImpersonatedUser         *UserInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectRef        `json:"objectRef,omitempty"`
	ResponseStatus           *responseStatus   `json:"responseStatus,omitempty"`
	RequestReceivedTimestamp string            `json:"requestReceivedTimestamp"`
	StageTimestamp           string            `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// microTime is kube-apiserver's timestamp format (metav1.MicroTime).
const microTime = "2006-01-02T15:04:05.000000Z07:00"

// Event is one request's audit event, filled in as the request is served.
// Its methods are safe for concurrent use and do nothing on a nil *Event,
// what From returns when the log is off.
type Event struct {
	log   *Log
	start time.Time

	mu       sync.Mutex
	rec      record
	clusters map[string]bool
	types    map[string]bool
	denied   map[string]bool
	started  bool
	done     bool
}

type eventKey struct{}

// WithEvent returns ctx carrying ev.
func WithEvent(ctx context.Context, ev *Event) context.Context {
	return context.WithValue(ctx, eventKey{}, ev)
}

// From returns the event of ctx, or nil.
func From(ctx context.Context) *Event {
	ev, _ := ctx.Value(eventKey{}).(*Event)
	return ev
}

// newEvent returns an event begun now.
func (l *Log) newEvent(id, uri, verb string) *Event {
	now := l.opts.Now()
	return &Event{log: l, start: now, rec: record{
		Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: l.opts.Level, AuditID: id,
		RequestURI: uri, Verb: verb, RequestReceivedTimestamp: now.UTC().Format(microTime),
		Annotations: map[string]string{},
	}}
}

// SetUser records the authenticated caller.
func (ev *Event) SetUser(u *authn.User) {
	if ev == nil || u == nil {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.rec.User = userInfo(u)
}

// SetImpersonated records the user the caller acts as.
func (ev *Event) SetImpersonated(u *authn.User) {
	if ev == nil || u == nil {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	info := userInfo(u)
	ev.rec.ImpersonatedUser = &info
}

// SetResource records a Kubernetes API request: its verb (get, list,
// watch, …), what it reads, and its cluster ("" for the fleet's API, whose
// clusters Touch records).
func (ev *Event) SetResource(verb string, ref ObjectRef, cluster string) {
	if ev == nil {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.rec.Verb = verb
	ev.rec.ObjectRef = &ref
	if cluster != "" {
		ev.touchLocked(cluster, "")
	}
}

// SetOperation records a GraphQL operation's name ("" when anonymous) and
// type (query, mutation, subscription).
func (ev *Event) SetOperation(name, typ string) {
	if ev == nil {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if name != "" {
		ev.rec.Annotations[AnnotationOperationName] = name
	}
	ev.rec.Annotations[AnnotationOperationType] = typ
}

// SetErrors records the codes of a GraphQL result's errors.
func (ev *Event) SetErrors(codes []string) {
	if ev == nil || len(codes) == 0 {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.rec.Annotations[AnnotationErrors] = strings.Join(slices.Compact(slices.Sorted(slices.Values(codes))), ",")
}

// Touch records that the request read resource (a kubectl name, "" for
// none) in cluster.
func (ev *Event) Touch(cluster, resource string) {
	if ev == nil {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.touchLocked(cluster, resource)
}

func (ev *Event) touchLocked(cluster, resource string) {
	if cluster != "" {
		if ev.clusters == nil {
			ev.clusters = map[string]bool{}
		}
		ev.clusters[cluster] = true
	}
	if resource != "" {
		if ev.types == nil {
			ev.types = map[string]bool{}
		}
		ev.types[resource] = true
	}
}

// Deny records that cluster denied the request, or part of it (a cluster
// left out of the fleet's list, a cluster whose reviews failed).
func (ev *Event) Deny(cluster string) {
	if ev == nil {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.denied == nil {
		ev.denied = map[string]bool{}
	}
	ev.denied[cluster] = true
}

// Decide records the authorization decision of the request, and its
// reason when it is forbidden.
func (ev *Event) Decide(allowed bool, reason string) {
	if ev == nil {
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if allowed {
		ev.rec.Annotations[AnnotationDecision] = "allow"
		return
	}
	ev.rec.Annotations[AnnotationDecision] = "forbid"
	if reason != "" {
		ev.rec.Annotations[AnnotationReason] = reason
	}
}

// Started writes the event at StageResponseStarted, once: a long
// request's response has begun.
func (ev *Event) Started() {
	if ev == nil {
		return
	}
	ev.mu.Lock()
	if ev.started || ev.done {
		ev.mu.Unlock()
		return
	}
	ev.started = true
	rec := ev.snapshotLocked(StageResponseStarted, 0)
	ev.mu.Unlock()
	ev.log.write(rec)
}

// Complete writes the event at StageResponseComplete with the response's
// status code, once.
func (ev *Event) Complete(code int) { ev.end(StageResponseComplete, code) }

func (ev *Event) end(stage string, code int) {
	if ev == nil {
		return
	}
	ev.mu.Lock()
	if ev.done {
		ev.mu.Unlock()
		return
	}
	ev.done = true
	rec := ev.snapshotLocked(stage, code)
	ev.mu.Unlock()
	ev.log.write(rec)
}

// Sub returns the event of an operation within ev's request (one on a
// WebSocket, id its operation id): the same caller, address and request
// URI, its own audit ID (ev's, "/", id), begun now. Its caller completes
// it.
func (ev *Event) Sub(id string) *Event {
	if ev == nil {
		return nil
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	sub := ev.log.newEvent(ev.rec.AuditID+"/"+id, ev.rec.RequestURI, ev.rec.Verb)
	sub.rec.User, sub.rec.ImpersonatedUser = ev.rec.User, ev.rec.ImpersonatedUser
	sub.rec.SourceIPs, sub.rec.UserAgent = ev.rec.SourceIPs, ev.rec.UserAgent
	sub.rec.Annotations[AnnotationConnection] = ev.rec.AuditID
	if m, ok := ev.rec.Annotations[AnnotationHTTPMethod]; ok {
		sub.rec.Annotations[AnnotationHTTPMethod] = m
	}
	return sub
}

// snapshotLocked returns the record to write at stage: a copy, so that
// what is added later does not change a line written already.
func (ev *Event) snapshotLocked(stage string, code int) *record {
	now := ev.log.opts.Now()
	rec := ev.rec
	rec.Stage = stage
	rec.StageTimestamp = now.UTC().Format(microTime)
	rec.Annotations = maps.Clone(ev.rec.Annotations)
	if code != 0 {
		rec.ResponseStatus = &responseStatus{Code: code}
	}
	if stage != StageResponseStarted {
		rec.Annotations[AnnotationLatency] = strconv.FormatFloat(now.Sub(ev.start).Seconds(), 'f', 6, 64)
	}
	for key, set := range map[string]map[string]bool{AnnotationClusters: ev.clusters, AnnotationResources: ev.types, AnnotationDenied: ev.denied} {
		if len(set) > 0 {
			rec.Annotations[key] = strings.Join(slices.Sorted(maps.Keys(set)), ",")
		}
	}
	if len(rec.Annotations) == 0 {
		rec.Annotations = nil
	}
	return &rec
}
