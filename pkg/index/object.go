package index

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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
	// Printer is for pkg/columns, which alone reads it; the index does not.
	// pkg/informers sets it when it sets the type up, before any object
	// points at the type: for a custom resource type, a *columns.Custom
	// holding its CustomResourceDefinition's printer columns; for Secrets
	// whose data is not cached, columns.DataNotCached. Nil otherwise.
	// (any: the index cannot name pkg/columns, which imports it.)
	Printer any
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
// the object's JSON bytes plus the few fields the indexes need. The informer
// store of its cluster and the global index share the same *Object; it is
// never modified after Build (or NewObject) returns. It is a runtime.Object,
// so that client-go's reflector takes it from list and watch responses.
type Object struct {
	Cluster         string
	Type            *Type
	Namespace       string
	Name            string
	UID             types.UID
	ResourceVersion string
	Labels          Labels
	Owners          []OwnerRef
	Created         time.Time
	// Raw is the object encoded as compact JSON.
	Raw []byte
	// specAt and statusAt are where in Raw the values of the top-level
	// members spec and status begin, 0 when not known (LocateMembers).
	specAt, statusAt uint32
}

// Doc returns the object as paths read it (see fieldpath.Doc).
func (o *Object) Doc() fieldpath.Doc {
	return fieldpath.Doc{Cluster: o.Cluster, Raw: o.Raw, Spec: int(o.specAt), Status: int(o.statusAt)}
}

// LocateMembers records where the values of the top-level members spec
// and status begin in o.Raw, so that paths into them read those members
// only: status comes after kilobytes of spec. NewObject does it; code that
// builds an Object otherwise may call it before the object is shared.
func LocateMembers(o *Object) {
	if len(o.Raw) > math.MaxUint32 {
		return
	}
	d := fieldpath.Members(o.Cluster, o.Raw)
	o.specAt, o.statusAt = uint32(d.Spec), uint32(d.Status)
}

// Key returns the object's key in the global index.
func (o *Object) Key() Key {
	return Key{Cluster: o.Cluster, Resource: o.Type.Resource, Namespace: o.Namespace, Name: o.Name}
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
}

// Build returns the Object of cluster and t whose metadata is m and whose
// JSON is raw, compact, which it keeps: the caller must not modify raw
// afterwards. Build takes m.Labels and m.Owners, sorting the labels by key.
// Strings that repeat across objects (cluster, namespace, label keys and
// values, owner API versions and kinds) are interned so each distinct
// value is held once.
func Build(cluster string, t *Type, m Meta, raw []byte) *Object {
	o := &Object{
		Cluster:         intern(cluster),
		Type:            t,
		Namespace:       intern(m.Namespace),
		Name:            m.Name,
		UID:             m.UID,
		ResourceVersion: m.ResourceVersion,
		Created:         m.Created,
		Raw:             raw,
	}
	LocateMembers(o)
	if len(m.Labels) > 0 {
		for i, l := range m.Labels {
			m.Labels[i] = Label{Key: intern(l.Key), Value: intern(l.Value)}
		}
		if !slices.IsSortedFunc(m.Labels, compareLabels) {
			slices.SortFunc(m.Labels, compareLabels)
		}
		o.Labels = m.Labels
	}
	if len(m.Owners) > 0 {
		for i := range m.Owners {
			m.Owners[i].APIVersion = intern(m.Owners[i].APIVersion)
			m.Owners[i].Kind = intern(m.Owners[i].Kind)
		}
		o.Owners = m.Owners
	}
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
