package object

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unique"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// Type describes one resource type of one API group as a cluster serves it.
// Objects point at a shared Type, so the per-object cost is one pointer.
type Type struct {
	// Resource is the kubectl-style name: "pods", "deployments.apps".
	Resource string
	// GVR is the group, version and plural resource name served by the cluster.
	GVR schema.GroupVersionResource
	// Kind is the object kind, e.g. "Deployment".
	Kind string
	// Namespaced is false for cluster-scoped types.
	Namespaced bool
	// Codec compresses the bodies of the type's objects (package
	// compact), one Codec per resource shared by every cluster; nil
	// stores them as they are.
	Codec *compact.Codec
	// Projected are paths whose values each object of the type keeps
	// beside its body, as Object.Projected returns them, so that a page
	// showing them (Resource.field) decodes and parses no body: about
	// 1.5 µs per path and object otherwise. pkg/informers sets them to the
	// paths the index has secondary indexes on (index.Index.IndexedPaths), before
	// any object points at the type. A Set reads them in one walk of
	// the object.
	Projected fieldpath.Set
}

// KindName is the kind as filters name it: "Pod" for the core group,
// "Deployment.apps" otherwise.
func (t *Type) KindName() string {
	if t.GVR.Group == "" {
		return t.Kind
	}
	return t.Kind + "." + t.GVR.Group
}

// APIVersion is "v1" or "apps/v1".
func (t *Type) APIVersion() string { return t.GVR.GroupVersion().String() }

// Key identifies one object in the global index.
type Key struct {
	Cluster   string
	Resource  string
	Namespace string
	Name      string
}

// String renders the key as cluster/resource/namespace/name (namespace empty
// for cluster-scoped objects).
func (k Key) String() string {
	return k.Cluster + "/" + k.Resource + "/" + k.Namespace + "/" + k.Name
}

// Label is one label of an object.
type Label struct{ Key, Value string }

// Labels is an object's labels sorted by key. It implements labels.Labels so
// selectors match against it without building a map.
type Labels []Label

// Lookup returns the value of the label and whether it is set.
func (ls Labels) Lookup(key string) (string, bool) {
	i, ok := slices.BinarySearchFunc(ls, key, func(l Label, k string) int { return strings.Compare(l.Key, k) })
	if !ok {
		return "", false
	}
	return ls[i].Value, true
}

// Has reports whether the label is set.
func (ls Labels) Has(key string) bool { _, ok := ls.Lookup(key); return ok }

// Get returns the value of the label, or "".
func (ls Labels) Get(key string) string { v, _ := ls.Lookup(key); return v }

// Map returns the labels as a new map.
func (ls Labels) Map() map[string]string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.Key] = l.Value
	}
	return m
}

// OwnerRef is the part of a metav1.OwnerReference the index needs.
type OwnerRef struct {
	APIVersion string
	Kind       string
	Name       string
	UID        types.UID
	Controller bool
}

// Object is the compact form in which fleetcache holds every cached object:
// the object's JSON bytes (compressed by its Type's Codec, see Raw) plus
// the few fields the indexes need. The informer store of its cluster and
// the global index share the same *Object; it is never modified after
// Build (or NewObject, or SetRaw) returns. It is a runtime.Object,
// so that client-go's reflector takes it from list and watch responses.
type Object struct {
	// The fields a scan of many objects reads (scopes, then the body) come
	// first, so that they share the object's first cache line.
	Cluster   string
	Namespace string
	Type      *Type
	// specAt and statusAt are where in the JSON the values of the
	// top-level members spec and status begin, 0 when not known.
	specAt, statusAt uint32
	// body is the object encoded as compact JSON, compressed by
	// Type.Codec once it is trained (Raw decodes it).
	body compact.Body

	Name string
	// projected holds the values of Type.Projected in their order, each
	// as its JSON text behind its length (a uvarint), an absent one as a
	// length of 0 and those absent at the end not at all. Beside Name: a page
	// that asks for fields reads both of every object, and a cache line
	// more per object was a quarter of what three fields cost a page.
	projected       string
	UID             types.UID
	ResourceVersion string
	Labels          Labels
	Owners          []OwnerRef
	// created is metadata.creationTimestamp in nanoseconds since 1970, 0
	// when unknown: 8 bytes where a time.Time takes 24, which put the
	// struct in the 192 B size class instead of 208 B.
	created int64
}

// Created returns metadata.creationTimestamp, in UTC; the zero time when
// unknown.
func (o *Object) Created() time.Time { return unixNano(o.created) }

// SetCreated sets what Created returns. Like SetRaw, it is for code that
// builds an Object field by field, before the object is shared.
func (o *Object) SetCreated(t time.Time) { o.created = nanos(t) }

// nanos returns t in nanoseconds since 1970, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// unixNano is the time of nanos' ns.
func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// SetRaw stores raw, the object encoded as compact JSON, as o's body
// (compressed by o.Type.Codec when it has one, so set Type first), and
// records where the values of the top-level members spec and status begin,
// so that paths into them read those members only: status comes after
// kilobytes of spec. Build calls it; code that builds an Object field by
// field calls it once, before the object is shared. raw must not change
// afterwards: an uncompressed body is raw itself.
func (o *Object) SetRaw(raw []byte) {
	var d fieldpath.Doc
	if len(raw) <= math.MaxUint32 {
		d = fieldpath.Members(o.Cluster, raw)
	}
	o.setRaw(raw, d, nil)
}

// setRaw is SetRaw with d, raw with the offsets of its members spec and
// status as fieldpath.Members finds them, and with the values of the
// type's Projected paths in found when read already (nil: read from d).
func (o *Object) setRaw(raw []byte, d fieldpath.Doc, found *fieldpath.Found) {
	var codec *compact.Codec
	if o.Type != nil {
		codec = o.Type.Codec
	}
	o.specAt, o.statusAt = 0, 0
	if len(raw) > math.MaxUint32 {
		o.body = codec.Encode(raw)
		return
	}
	o.specAt, o.statusAt = uint32(d.Spec), uint32(d.Status)
	// Status apart: reads of status fields (phases, start times,
	// container statuses) then decode that part alone.
	o.body = codec.EncodeParts(raw, d.Status)
	o.project(d, found)
}

// project keeps the values of the type's Projected paths in d, o's JSON,
// as found has them when given.
func (o *Object) project(d fieldpath.Doc, found *fieldpath.Found) {
	o.projected = ""
	if o.Type == nil || o.Type.Projected.Len() == 0 {
		return
	}
	if found == nil {
		found = o.Type.Projected.Read(d)
		defer found.Release()
	}
	// A stack buffer for the common case: the values are copied into the
	// identity's allocation (setIdentity), so ingest allocates once.
	var outBuf [512]byte
	out := outBuf[:0]
	for i := range o.Type.Projected.Len() {
		v := found.JSON(i)
		if string(v) == "null" {
			// Most paths are absent from most objects (a Pod's relation
			// paths: 13 of 14): a length of 0 stands for null, 4 bytes
			// less each.
			v = nil
		}
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	// The absent values at the end are not kept at all (the relation
	// paths come last), but for the first: no values at all would read as
	// none kept. A JSON text holds no 0 byte, so trailing 0s are lengths.
	end := len(out)
	for end > 1 && out[end-1] == 0 {
		end--
	}
	o.setIdentity(string(out[:end]))
}

// setIdentity puts o's name, the projected values, UID and
// resourceVersion in one allocation, in that order: the heap rounds one
// size up instead of several, and a page that asks for names and fields
// reads them from adjacent bytes.
func (o *Object) setIdentity(projected string) {
	n := len(o.Name)
	p := n + len(projected)
	u := p + len(o.UID)
	all := o.Name + projected + string(o.UID) + o.ResourceVersion
	o.Name, o.projected, o.UID, o.ResourceVersion = all[:n], all[n:p], types.UID(all[p:u]), all[u:]
}

// EachProjected calls fn with the JSON text of each value o keeps beside
// its body, in the order of its type's Projected paths, as Projected
// returns them; it returns false, calling fn for none, when o keeps none
// (no paths, or stored without its body).
func (o *Object) EachProjected(fn func(i int, json []byte)) bool {
	if o.projected == "" {
		return false
	}
	rest := unsafe.Slice(unsafe.StringData(o.projected), len(o.projected))
	i := 0
	for ; len(rest) > 0; i++ {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return true // written by project: this cannot happen
		}
		fn(i, projectedValue(rest[k:k+int(n):k+int(n)]))
		rest = rest[k+int(n):]
	}
	for ; i < o.Type.Projected.Len(); i++ {
		fn(i, null[:4:4]) // absent at the end: not kept
	}
	return true
}

// Projected returns the JSON text of the value at p, as
// fieldpath.Path.AppendJSONIn writes it ("null" when absent), when p is
// one of the type's Projected paths, without decoding the body. The bytes
// are the object's own and must not be modified. An object stored without
// its body (MetadataOnly) has no projected values.
func (o *Object) Projected(p fieldpath.Path) ([]byte, bool) {
	if o.projected == "" {
		return nil, false
	}
	// A view of the string, not a copy: a page reads it for every object.
	rest := unsafe.Slice(unsafe.StringData(o.projected), len(o.projected))
	i, ok := o.Type.Projected.Index(p)
	if !ok {
		return nil, false
	}
	for ; ; i-- {
		if len(rest) == 0 {
			return null[:4:4], true // absent at the end: not kept
		}
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return nil, false // written by project: this cannot happen
		}
		if i == 0 {
			return projectedValue(rest[k : k+int(n) : k+int(n)]), true
		}
		rest = rest[k+int(n):]
	}
}

// null is the JSON of an absent value, which project keeps as no bytes.
var null = []byte("null")

// projectedValue returns the JSON text of a value as project kept it.
func projectedValue(v []byte) []byte {
	if len(v) == 0 {
		return null[:4:4]
	}
	return v
}

// Each calls fn, as p.EachIn would, with each value at p in o, until fn
// returns false; it returns false if fn did. When p is one of the type's
// Projected paths it reads the values kept beside the body (no body is
// decoded or parsed), else the body through r (see BodyReader.DocFor).
// The values' strings point into o's bytes or r's buffers.
func (o *Object) Each(p fieldpath.Path, r *BodyReader, fn func(fieldpath.Value) bool) bool {
	if v, ok := o.Projected(p); ok {
		return p.EachInJSON(v, fn)
	}
	return p.EachIn(r.DocFor(p, o), fn)
}

// Raw returns the object encoded as compact JSON, byte for byte what
// SetRaw was given, which must not be modified. An uncompressed body is
// returned as it is stored; a compressed one is decoded (about a
// microsecond for a 3 KB Pod) and kept among the last 256 decoded by its
// Codec's registry (compact.Codec.DecodeShared), so that reading several fields of a page's objects decodes
// each once. Reads of many objects inside the index use their own
// buffers instead (BodyReader).
//
// An object stored without its body (the memory budget, see
// index.Options.MemoryBudget) reads as its metadata: apiVersion, kind, and the
// name, namespace, UID, resourceVersion, creation time, labels and owner
// references the index holds.
func (o *Object) Raw() []byte {
	if raw, ok := compact.View(o.body); ok {
		return raw
	}
	if o.body.Dropped() {
		return metadataJSON(o)
	}
	raw, err := o.Type.Codec.DecodeShared(o.body)
	if err != nil {
		// Bodies are made by the same Codec: this cannot happen.
		return nil
	}
	return raw
}

// Compressed reports whether the object's body is stored compressed.
func (o *Object) Compressed() bool { return o.body.Compressed() }

// MetadataOnly reports whether the object is stored without its body, as
// the memory budget decided (see index.Options.MemoryBudget): Raw holds its
// metadata only, and paths outside it have no value.
func (o *Object) MetadataOnly() bool { return o.body.Dropped() }

// BodySize is how many bytes the object's stored body takes.
func (o *Object) BodySize() int { return len(o.body) }

// StoredSize is how many bytes the object's stored body and its projected
// values take: what a memory budget charges for them.
func (o *Object) StoredSize() int { return len(o.body) + len(o.projected) }

// DropBody stores o without its body and its projected values, keeping
// its metadata (MetadataOnly), as the memory budget of an index decides:
// only before o is shared with any reader of bodies.
func (o *Object) DropBody() {
	o.body, o.specAt, o.statusAt = compact.Dropped, 0, 0
	// The identity shared its allocation with the values (project).
	o.setIdentity("")
}

// metadataJSON is the JSON of an object whose body the memory budget
// dropped (DropBody): what the index holds of it.
func metadataJSON(o *Object) []byte {
	type owner struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		UID        string `json:"uid"`
		Controller bool   `json:"controller,omitempty"`
	}
	type meta struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace,omitempty"`
		UID               string            `json:"uid,omitempty"`
		ResourceVersion   string            `json:"resourceVersion,omitempty"`
		CreationTimestamp string            `json:"creationTimestamp,omitempty"`
		Labels            map[string]string `json:"labels,omitempty"`
		OwnerReferences   []owner           `json:"ownerReferences,omitempty"`
	}
	m := meta{Name: o.Name, Namespace: o.Namespace, UID: string(o.UID), ResourceVersion: o.ResourceVersion}
	if o.created != 0 {
		m.CreationTimestamp = o.Created().Format(time.RFC3339)
	}
	if len(o.Labels) > 0 {
		m.Labels = o.Labels.Map()
	}
	for _, r := range o.Owners {
		m.OwnerReferences = append(m.OwnerReferences, owner{r.APIVersion, r.Kind, r.Name, string(r.UID), r.Controller})
	}
	raw, _ := json.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
	}{o.Type.APIVersion(), o.Type.Kind, m}) // cannot fail: strings, maps of strings
	return raw
}

// Doc returns the object as paths read it (see fieldpath.Doc). For a
// compressed body it decodes a copy of the JSON.
func (o *Object) Doc() fieldpath.Doc {
	return fieldpath.Doc{Cluster: o.Cluster, Raw: o.Raw(), Spec: int(o.specAt), Status: int(o.statusAt)}
}

// BodyReader decodes compressed bodies into reused buffers, for the reads
// of one query or one write: it keeps the last two objects decoded (a
// write reads the old and the new version of an object in turns), so a Doc
// it returns, and every string read from it, stays valid until two other
// objects have been read. Whoever keeps a value longer copies it. A nil
// BodyReader decodes into a new buffer each time. It is not safe for
// concurrent use.
type BodyReader struct {
	slots [2]decodedBody
	last  int
}

// decodedBody is an object whose body a BodyReader decoded: all of it, or
// when status is only the part from where status begins.
type decodedBody struct {
	o      *Object
	buf    []byte
	status bool
}

// Doc returns o as paths read it, decoding a compressed body into one of
// the reader's buffers unless it holds o already.
func (r *BodyReader) Doc(o *Object) fieldpath.Doc {
	return fieldpath.Doc{Cluster: o.Cluster, Raw: r.Raw(o), Spec: int(o.specAt), Status: int(o.statusAt)}
}

// DocFor returns o as p reads it: when p reads into status and o's body
// keeps status apart (SetRaw), a StatusOnly Doc of that part alone, a
// third of a Pod's bytes to decode; otherwise Doc(o).
func (r *BodyReader) DocFor(p fieldpath.Path, o *Object) fieldpath.Doc {
	if r == nil || !p.IntoStatus() || o.statusAt == 0 || o.body.Split() != int(o.statusAt) {
		return r.Doc(o)
	}
	for i := range r.slots {
		if s := &r.slots[i]; s.o == o {
			r.last = i
			if s.status {
				return fieldpath.Doc{Cluster: o.Cluster, Raw: s.buf, StatusOnly: true}
			}
			return fieldpath.Doc{Cluster: o.Cluster, Raw: s.buf, Spec: int(o.specAt), Status: int(o.statusAt)}
		}
	}
	return fieldpath.Doc{Cluster: o.Cluster, Raw: r.decode(o, true), StatusOnly: true}
}

// Raw returns o's JSON, decoded into one of the reader's buffers.
func (r *BodyReader) Raw(o *Object) []byte {
	if raw, ok := compact.View(o.body); ok {
		return raw
	}
	if r == nil || o.body.Dropped() {
		return o.Raw()
	}
	for i := range r.slots {
		if r.slots[i].o == o && !r.slots[i].status {
			r.last = i
			return r.slots[i].buf
		}
	}
	// A slot holding o's status part counts as another object: values
	// read from it stay valid.
	return r.decode(o, false)
}

// decode decodes o's compressed body, or only its status part, into the
// slot read longest ago.
func (r *BodyReader) decode(o *Object, status bool) []byte {
	i := 1 - r.last
	s := &r.slots[i]
	var raw []byte
	var err error
	if status {
		raw, err = o.Type.Codec.DecodeSecond(s.buf[:0], o.body)
	} else {
		raw, err = o.Type.Codec.Decode(s.buf[:0], o.body)
	}
	if err != nil {
		raw = raw[:0] // bodies are made by the same Codec: this cannot happen
	}
	s.o, s.buf, s.status, r.last = o, raw, status, i
	return raw
}

// Key returns the object's key in the global index.
func (o *Object) Key() Key {
	return Key{Cluster: o.Cluster, Resource: o.Type.Resource, Namespace: o.Namespace, Name: o.Name}
}

// HasOwner reports whether o has an owner reference with this UID.
func (o *Object) HasOwner(uid types.UID) bool {
	for _, r := range o.Owners {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// GetObjectMeta lets client-go's stores and key functions (meta.Accessor)
// read the object's identity. It builds a small ObjectMeta on each call
// instead of keeping one per object. A bookmark (NewBookmark) that ends a
// streaming list's initial events carries the annotation that says so.
func (o *Object) GetObjectMeta() metav1.Object {
	m := &metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion}
	if o.Type == initialEventsEnd {
		m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return m
}

// GetObjectKind is part of runtime.Object, which client-go's reflector
// requires of the objects of list and watch responses. An Object's kind
// is its Type's; it has no settable one.
func (o *Object) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject is part of runtime.Object. An Object is never modified
// once built, so a copy of the struct shares its slices and strings.
func (o *Object) DeepCopyObject() runtime.Object {
	c := *o
	return &c
}

// initialEventsEnd is the Type of the bookmark that ends a streaming
// list's initial events: a marker, so that no Object carries a field for it.
var initialEventsEnd = &Type{Resource: "<initial-events-end>"}

// NewBookmark returns the object of a watch's BOOKMARK event, for client-go's
// reflector: a resourceVersion, and whether it ends the initial events of
// a streaming list (the k8s.io/initial-events-end annotation). It is never
// stored.
func NewBookmark(resourceVersion string, initialEventsEndAnnotated bool) *Object {
	o := &Object{ResourceVersion: resourceVersion}
	if initialEventsEndAnnotated {
		o.Type = initialEventsEnd
	}
	return o
}

// Meta is what the indexes need of an object, read from it by whoever
// decodes it (package wire reads it from the API server's bytes).
type Meta struct {
	Namespace       string
	Name            string
	UID             types.UID
	ResourceVersion string
	// Labels in any order.
	Labels  Labels
	Owners  []OwnerRef
	Created time.Time
	// Interned says that the strings that repeat across objects (the
	// namespace, the labels' keys and values, the owners' API versions
	// and kinds) and the cluster's name are interned already
	// (unique.Make), as package wire interns them: Build keeps them as
	// they are.
	Interned bool
}

// Build returns the Object of cluster and t whose metadata is m and whose
// JSON is raw, compact, which it keeps (compressed by t's Codec, see
// SetRaw): the caller must not modify raw afterwards. Build takes m.Labels and m.Owners, sorting the labels by key.
// Strings that repeat across objects (cluster, namespace, label keys and
// values, owner API versions and kinds) are interned so each distinct
// value is held once.
func Build(cluster string, t *Type, m Meta, raw []byte) *Object {
	o := newObject(cluster, t, m)
	o.SetRaw(raw)
	o.setMeta(m.Labels, m.Owners, m.Interned)
	return o
}

// BuildAt is Build for raw whose top-level members spec and status have
// their values at offsets spec and status (0 when absent; the first of
// repeated keys), as fieldpath.Members would find them: a decoder that
// wrote raw knows them, and saves a reading of it. Unlike Build, BuildAt
// only reads raw: the caller may reuse it afterwards. A compressed body
// is a new allocation anyway; an uncompressed one is copied. A caller
// that read the values of t.Projected's paths in raw already, with others
// it reads, in one walk, passes what it found (Set.Read of a Set whose
// first paths are t.Projected's); nil reads them here.
func BuildAt(cluster string, t *Type, m Meta, raw []byte, spec, status int, found *fieldpath.Found) *Object {
	o := newObject(cluster, t, m)
	o.setRaw(raw, fieldpath.Doc{Cluster: o.Cluster, Raw: raw, Spec: spec, Status: status}, found)
	if kept, ok := compact.View(o.body); ok && len(kept) > 0 && unsafe.SliceData(kept) == unsafe.SliceData(raw) {
		o.body = compact.Plain(slices.Clone(raw))
	}
	o.setMeta(m.Labels, m.Owners, m.Interned)
	return o
}

func newObject(cluster string, t *Type, m Meta) *Object {
	if !m.Interned {
		cluster, m.Namespace = intern(cluster), intern(m.Namespace)
	}
	return &Object{
		Cluster:         cluster,
		Type:            t,
		Namespace:       m.Namespace,
		Name:            m.Name,
		UID:             m.UID,
		ResourceVersion: m.ResourceVersion,
		created:         nanos(m.Created),
	}
}

// setMeta takes labels and owners, interning the strings that repeat
// across objects unless they are interned already, and sorting the labels
// by key.
func (o *Object) setMeta(labels Labels, owners []OwnerRef, interned bool) {
	if !interned {
		for i, l := range labels {
			labels[i] = Label{Key: intern(l.Key), Value: intern(l.Value)}
		}
		for i := range owners {
			owners[i].APIVersion = intern(owners[i].APIVersion)
			owners[i].Kind = intern(owners[i].Kind)
		}
	}
	if len(labels) > 0 {
		if !slices.IsSortedFunc(labels, compareLabels) {
			slices.SortFunc(labels, compareLabels)
		}
		o.Labels = labels
	}
	if len(owners) > 0 {
		o.Owners = owners
	}
}

// Stored is an Object as it is held: what a snapshot keeps of it
// (pkg/warmstart) so that Restore rebuilds it without parsing or
// compressing its JSON again.
type Stored struct {
	Meta
	// Body is the stored body (compact.Body): plain, Dropped, or
	// compressed by the type's Codec, whose dictionary must be the same
	// when the object is rebuilt (compact.Codec.Dict, Adopt).
	Body compact.Body
	// SpecAt and StatusAt are where the values of the top-level members
	// spec and status begin in the JSON, 0 when not known.
	SpecAt, StatusAt uint32
	// Projected holds the values of the type's Projected paths as the
	// object keeps them (see Projected): valid only for the same paths.
	Projected string
}

// Stored returns o as it is held. The slices and strings are o's own: do
// not modify them.
func (o *Object) Stored() Stored {
	return Stored{
		Meta: Meta{Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion,
			Labels: o.Labels, Owners: o.Owners, Created: o.Created()},
		Body: o.body, SpecAt: o.specAt, StatusAt: o.statusAt, Projected: o.projected,
	}
}

// Restore returns the Object of cluster and t that s, returned by Stored
// for an object of the same resource, describes, as Build would have
// built it from its JSON: t's Codec must hold the dictionary its body was
// compressed with, and t.Projected the paths of s.Projected. Restore takes
// s's slices (the labels sorted by key).
func Restore(cluster string, t *Type, s Stored) *Object {
	o := &Object{
		Cluster:         intern(cluster),
		Type:            t,
		Namespace:       intern(s.Namespace),
		Name:            s.Name,
		UID:             s.UID,
		ResourceVersion: s.ResourceVersion,
		created:         nanos(s.Created),
		body:            s.Body,
		specAt:          s.SpecAt,
		statusAt:        s.StatusAt,
	}
	o.setMeta(s.Labels, s.Owners, s.Interned)
	o.setIdentity(s.Projected)
	return o
}

func compareLabels(a, b Label) int { return strings.Compare(a.Key, b.Key) }

// NewObject builds the compact form of u for the given cluster and type:
// u encoded by encoding/json (so with its members sorted by key) and the
// metadata the indexes need. The informers do not use it: they decode the
// API server's bytes with package wire, keeping the server's order. Tests
// and tools that hold unstructured objects do.
func NewObject(cluster string, t *Type, u *unstructured.Unstructured) (*Object, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s: %w", t.Resource, u.GetNamespace(), u.GetName(), err)
	}
	m := Meta{
		Namespace:       u.GetNamespace(),
		Name:            u.GetName(),
		UID:             u.GetUID(),
		ResourceVersion: u.GetResourceVersion(),
		Created:         u.GetCreationTimestamp().Time,
	}
	if lm := u.GetLabels(); len(lm) > 0 {
		m.Labels = make(Labels, 0, len(lm))
		for k, v := range lm {
			m.Labels = append(m.Labels, Label{Key: k, Value: v})
		}
	}
	if refs := u.GetOwnerReferences(); len(refs) > 0 {
		m.Owners = make([]OwnerRef, len(refs))
		for i, r := range refs {
			m.Owners[i] = OwnerRef{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID,
				Controller: r.Controller != nil && *r.Controller}
		}
	}
	return Build(cluster, t, m, raw), nil
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
