package relations

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// The kinds relations join.
var (
	pod            = kindRef{"", "Pod"}
	node           = kindRef{"", "Node"}
	service        = kindRef{"", "Service"}
	event          = kindRef{"", "Event"}
	configMap      = kindRef{"", "ConfigMap"}
	secret         = kindRef{"", "Secret"}
	pvc            = kindRef{"", "PersistentVolumeClaim"}
	pv             = kindRef{"", "PersistentVolume"}
	deployment     = kindRef{"apps", "Deployment"}
	replicaSet     = kindRef{"apps", "ReplicaSet"}
	statefulSet    = kindRef{"apps", "StatefulSet"}
	daemonSet      = kindRef{"apps", "DaemonSet"}
	job            = kindRef{"batch", "Job"}
	ingress        = kindRef{"networking.k8s.io", "Ingress"}
	hpa            = kindRef{"autoscaling", "HorizontalPodAutoscaler"}
	endpointSlice  = kindRef{"discovery.k8s.io", "EndpointSlice"}
	newEvent       = kindRef{"events.k8s.io", "Event"}
	serviceNameKey = "kubernetes.io/service-name"
)

// The paths relations read, in the objects' bytes (or the values kept
// beside them) going forward, through the index's postings on them
// (index.RelationPaths) going backward.
var (
	nodeNamePath     = fieldpath.MustParse("spec.nodeName")
	selectorPath     = fieldpath.MustParse("spec.selector")
	volumeNamePath   = fieldpath.MustParse("spec.volumeName")
	claimRefPath     = fieldpath.MustParse("spec.claimRef")
	involvedPath     = fieldpath.MustParse("involvedObject")
	regardingPath    = fieldpath.MustParse("regarding")
	scaleTargetPath  = fieldpath.MustParse("spec.scaleTargetRef")
	ingressPaths     = paths("spec.defaultBackend.service.name", "spec.rules[].http.paths[].backend.service.name")
	claimPaths       = paths("spec.volumes[].persistentVolumeClaim.claimName")
	configMapPaths   = relationPaths("configmap")
	secretPaths      = relationPaths("secret")
	eventUIDPath     = fieldpath.MustParse("involvedObject.uid")
	newEventUIDPath  = fieldpath.MustParse("regarding.uid")
	podsResource     = "pods"
	eventsResources  = [2]string{"events", "events.events.k8s.io"}
	replicaSetsRes   = "replicasets.apps"
	endpointSliceRes = "endpointslices.discovery.k8s.io"
)

func paths(texts ...string) []fieldpath.Path {
	out := make([]fieldpath.Path, len(texts))
	for i, t := range texts {
		out[i] = fieldpath.MustParse(t)
	}
	return out
}

// relationPaths returns the paths of index.RelationPaths["pods"] whose
// text holds word, in any case: "configmap", "secret".
func relationPaths(word string) []fieldpath.Path {
	var out []fieldpath.Path
	for _, p := range index.RelationPaths["pods"] {
		if strings.Contains(strings.ToLower(p.String()), word) {
			out = append(out, p)
		}
	}
	return out
}

// table lists every relation (docs/graphql.md, "Relations").
var table = []relation{
	{from: pod, to: node, name: "node", one: true, find: (*resolver).podNode,
		desc: "The Node the Pod is bound to (spec.nodeName), in its cluster; null if none, not cached or not visible to the caller."},
	{from: node, to: pod, name: "pods", sorted: true, find: (*resolver).nodePods,
		desc: "The Pods bound to the Node (spec.nodeName) in its cluster, a page at a time, as resources answers."},
	{from: service, to: pod, name: "pods", sorted: true, find: (*resolver).servicePods,
		desc: "The Pods the Service's selector selects in its namespace and cluster, a page at a time, as resources " +
			"answers; none for a Service without a selector."},
	{from: pod, to: service, name: "services", find: (*resolver).podServices,
		desc: "The Services of the Pod's namespace and cluster whose selector selects the Pod's labels (found through the " +
			"index of the Services' selectors, not by reading every Service), a page at a time."},
	{from: anyKind, to: anyKind, name: "owner", one: true, find: (*resolver).owner,
		desc: "The cached owner that controls the object (the ownerReference with controller: true, else the first), by " +
			"name and UID in its cluster: a Pod's ReplicaSet, whose owner is its Deployment. Null if none, not cached or " +
			"not visible to the caller."},
	{from: deployment, to: replicaSet, name: "replicaSets", sorted: true, find: owned(replicaSetsRes),
		desc: "The ReplicaSets the Deployment owns (ownerReferences), a page at a time."},
	{from: deployment, to: pod, name: "pods", find: (*resolver).deploymentPods,
		desc: "The Pods of the Deployment's ReplicaSets (ownerReferences, two hops through the owners' postings), a page " +
			"at a time. The ReplicaSets are hops, shown or not."},
	{from: replicaSet, to: pod, name: "pods", sorted: true, find: owned(podsResource),
		desc: "The Pods the ReplicaSet owns (ownerReferences), a page at a time."},
	{from: statefulSet, to: pod, name: "pods", sorted: true, find: owned(podsResource),
		desc: "The Pods the StatefulSet owns (ownerReferences), a page at a time."},
	{from: daemonSet, to: pod, name: "pods", sorted: true, find: owned(podsResource),
		desc: "The Pods the DaemonSet owns (ownerReferences), a page at a time."},
	{from: job, to: pod, name: "pods", sorted: true, find: owned(podsResource),
		desc: "The Pods the Job owns (ownerReferences), a page at a time."},
	{from: anyKind, to: event, name: "events", sorted: true, find: (*resolver).events,
		desc: "The Events about the object (involvedObject.uid, or regarding.uid of events.k8s.io Events, through their " +
			"index), in its cluster, a page at a time."},
	{from: event, to: anyKind, name: "involvedResource", one: true, find: involved(involvedPath),
		desc: "The cached object the Event is about (involvedObject, by name and UID); null if not cached or not visible. " +
			"Named so because involvedObject is the Event's own reference."},
	{from: newEvent, to: anyKind, name: "involvedResource", one: true, find: involved(regardingPath),
		desc: "The cached object the Event is about (regarding, by name and UID); null if not cached or not visible."},
	{from: pvc, to: pv, name: "volume", one: true, find: (*resolver).pvcVolume,
		desc: "The PersistentVolume bound to the claim (spec.volumeName); null if none, not cached or not visible."},
	{from: pv, to: pvc, name: "claim", one: true, find: (*resolver).pvClaim,
		desc: "The PersistentVolumeClaim the volume is bound to (spec.claimRef, by name and UID); null if none, not cached or not visible."},
	{from: pod, to: pvc, name: "persistentVolumeClaims", find: named(claimPaths, pvc),
		desc: "The cached PersistentVolumeClaims the Pod's volumes name, a page at a time."},
	{from: pvc, to: pod, name: "pods", sorted: true, find: referring(claimPaths),
		desc: "The Pods whose volumes name the claim (through the index of spec.volumes[].persistentVolumeClaim.claimName), a page at a time."},
	{from: pod, to: configMap, name: "configMaps", find: named(configMapPaths, configMap),
		desc: "The cached ConfigMaps the Pod mounts or references: volumes (projected too), env and envFrom of its " +
			"containers and init containers; a page at a time."},
	{from: pod, to: secret, name: "secrets", find: named(secretPaths, secret),
		desc: "The cached Secrets the Pod mounts or references: volumes (projected too), env and envFrom of its " +
			"containers and init containers, imagePullSecrets; a page at a time."},
	{from: configMap, to: pod, name: "pods", sorted: true, find: referring(configMapPaths),
		desc: "The Pods that mount or reference the ConfigMap (volumes, projected volumes, env, envFrom), through the " +
			"index of each of those paths, a page at a time."},
	{from: secret, to: pod, name: "pods", sorted: true, find: referring(secretPaths),
		desc: "The Pods that mount or reference the Secret (volumes, projected volumes, env, envFrom, imagePullSecrets), " +
			"through the index of each of those paths, a page at a time."},
	{from: ingress, to: service, name: "services", find: named(ingressPaths, service),
		desc: "The cached Services the Ingress's backends name (defaultBackend, rules), a page at a time."},
	{from: hpa, to: anyKind, name: "target", one: true, find: (*resolver).hpaTarget,
		desc: "The object the autoscaler scales (spec.scaleTargetRef, by kind, group and name); null if not cached or not visible."},
	{from: endpointSlice, to: service, name: "service", one: true, find: (*resolver).sliceService,
		desc: "The Service the EndpointSlice belongs to (its label kubernetes.io/service-name); null if not cached or not visible."},
	{from: service, to: endpointSlice, name: "endpointSlices", sorted: true, find: (*resolver).serviceSlices,
		desc: "The EndpointSlices of the Service (their label kubernetes.io/service-name, through the label postings), a page at a time."},
}

// stringAt returns the first string at path in o.
func stringAt(o *object.Object, path fieldpath.Path) string {
	var s string
	path.EachIn(o.Doc(), func(v fieldpath.Value) bool {
		if v.Kind == fieldpath.String {
			s = v.Str
			return false
		}
		return true
	})
	return s
}

// objectAt decodes the object at path in o into v; false when absent.
func objectAt(o *object.Object, path fieldpath.Path, v any) bool {
	found := false
	path.EachIn(o.Doc(), func(x fieldpath.Value) bool {
		if x.Kind == fieldpath.Object {
			found = json.Unmarshal(x.AppendJSON(nil), v) == nil
		}
		return false
	})
	return found
}

// lookup returns the cached object of kind k named name in namespace of
// o's cluster (with uid, unless it is empty), as Objects.
func (r *resolver) lookup(o *object.Object, k kindRef, namespace, name string, uid types.UID) Related {
	rel := Related{Cluster: o.Cluster}
	if name == "" {
		return rel
	}
	for _, x := range r.e.Lookup(o.Cluster, namespace, name) {
		if (k == anyKind || k.of(x)) && (uid == "" || x.UID == uid) {
			rel.Objects = append(rel.Objects, x)
			break
		}
	}
	return rel
}

// filter returns a filter of resource in o's cluster and namespace (in
// the whole cluster for a cluster-scoped o).
func filter(o *object.Object, resource string) planner.Filter {
	f := planner.Filter{Clusters: []string{o.Cluster}, Resources: []string{resource}}
	if o.Namespace != "" {
		f.Namespaces = []string{o.Namespace}
	}
	return f
}

// fieldIs returns the field selector path=value.
func fieldIs(path fieldpath.Path, value string) fieldselector.Selector {
	return fieldselector.Of(fieldselector.Compare(path, fieldselector.Equals, value))
}

func (r *resolver) podNode(o *object.Object) Related {
	return r.lookup(o, node, "", stringAt(o, nodeNamePath), "")
}

func (r *resolver) nodePods(o *object.Object) Related {
	f := planner.Filter{Clusters: []string{o.Cluster}, Resources: []string{podsResource}, Fields: fieldIs(nodeNamePath, o.Name)}
	return Related{Cluster: o.Cluster, Filters: []planner.Filter{f}}
}

func (r *resolver) servicePods(o *object.Object) Related {
	rel := Related{Cluster: o.Cluster}
	var set labels.Set
	if !objectAt(o, selectorPath, &set) || len(set) == 0 {
		return rel // no selector selects no Pod (its endpoints are managed apart)
	}
	f := filter(o, podsResource)
	f.Selector = labels.SelectorFromSet(set)
	rel.Filters = []planner.Filter{f}
	return rel
}

func (r *resolver) podServices(o *object.Object) Related {
	return Related{Cluster: o.Cluster, Objects: r.e.Selecting(o.Cluster, o.Namespace, "services", o.Labels)}
}

// owner finds the controlling owner, in the object's namespace or
// cluster-scoped.
func (r *resolver) owner(o *object.Object) Related {
	if len(o.Owners) == 0 {
		return Related{Cluster: o.Cluster}
	}
	ref := o.Owners[0]
	for _, x := range o.Owners {
		if x.Controller {
			ref = x
			break
		}
	}
	rel := r.lookup(o, anyKind, o.Namespace, ref.Name, ref.UID)
	if len(rel.Objects) == 0 && o.Namespace != "" {
		rel = r.lookup(o, anyKind, "", ref.Name, ref.UID)
	}
	return rel
}

// owned returns the finder of the objects of resource that o owns.
func owned(resource string) func(*resolver, *object.Object) Related {
	return func(r *resolver, o *object.Object) Related {
		f := filter(o, resource)
		f.OwnerUID = o.UID
		return Related{Cluster: o.Cluster, Filters: []planner.Filter{f}}
	}
}

// maxHops bounds the ReplicaSets a Deployment's Pods are read through:
// its revision history (10 by default) and more.
const maxHops = 256

func (r *resolver) deploymentPods(o *object.Object) Related {
	rel := Related{Cluster: o.Cluster}
	f := filter(o, replicaSetsRes)
	f.OwnerUID = o.UID
	for _, rs := range r.e.Find([]planner.Filter{f}, maxHops) {
		// Disjoint: a Pod has one controller; a Pod that two of them
		// owned would be listed twice.
		pf := filter(o, podsResource)
		pf.OwnerUID = rs.UID
		rel.Filters = append(rel.Filters, pf)
	}
	return rel
}

func (r *resolver) events(o *object.Object) Related {
	rel := Related{Cluster: o.Cluster}
	for i, path := range []fieldpath.Path{eventUIDPath, newEventUIDPath} {
		f := filter(o, eventsResources[i])
		f.Fields = fieldIs(path, string(o.UID))
		rel.Filters = append(rel.Filters, f)
	}
	return rel
}

// involved returns the finder of the object an Event's reference at path
// names.
func involved(path fieldpath.Path) func(*resolver, *object.Object) Related {
	return func(r *resolver, o *object.Object) Related {
		var ref struct {
			Kind, Namespace, Name, APIVersion string
			UID                               types.UID
		}
		if !objectAt(o, path, &ref) {
			return Related{Cluster: o.Cluster}
		}
		return r.lookup(o, refKind(ref.APIVersion, ref.Kind), ref.Namespace, ref.Name, ref.UID)
	}
}

// refKind is the kind of a reference's apiVersion and kind.
func refKind(apiVersion, kind string) kindRef {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = ""
	}
	return kindRef{group, kind}
}

func (r *resolver) pvcVolume(o *object.Object) Related {
	return r.lookup(o, pv, "", stringAt(o, volumeNamePath), "")
}

func (r *resolver) pvClaim(o *object.Object) Related {
	var ref struct {
		Namespace, Name string
		UID             types.UID
	}
	if !objectAt(o, claimRefPath, &ref) {
		return Related{Cluster: o.Cluster}
	}
	return r.lookup(o, pvc, ref.Namespace, ref.Name, ref.UID)
}

// named returns the finder of the objects of kind k that o names at
// paths, in its namespace.
func named(paths []fieldpath.Path, k kindRef) func(*resolver, *object.Object) Related {
	return func(r *resolver, o *object.Object) Related {
		rel := Related{Cluster: o.Cluster}
		seen := map[string]bool{}
		for _, p := range paths {
			p.EachIn(o.Doc(), func(v fieldpath.Value) bool {
				if v.Kind == fieldpath.String && !seen[v.Str] {
					seen[v.Str] = true
					rel.add(r.lookup(o, k, o.Namespace, v.Str, ""))
				}
				return true
			})
		}
		return rel
	}
}

// referring returns the finder of the Pods of o's namespace that name o
// at one of paths: a filter per path, each leaving out the Pods the
// filters before it select (path!=name on those), so that they are
// disjoint. Each filter is narrowed by the posting of its path's value;
// != reads only the candidates it leaves.
func referring(paths []fieldpath.Path) func(*resolver, *object.Object) Related {
	return func(r *resolver, o *object.Object) Related {
		rel := Related{Cluster: o.Cluster}
		var not []fieldselector.Requirement
		for _, p := range paths {
			f := filter(o, podsResource)
			f.Fields = fieldselector.Of(append(not, fieldselector.Compare(p, fieldselector.Equals, o.Name))...)
			rel.Filters = append(rel.Filters, f)
			not = append(not, fieldselector.Compare(p, fieldselector.NotEquals, o.Name))
		}
		return rel
	}
}

func (r *resolver) hpaTarget(o *object.Object) Related {
	var ref struct{ APIVersion, Kind, Name string }
	if !objectAt(o, scaleTargetPath, &ref) {
		return Related{Cluster: o.Cluster}
	}
	return r.lookup(o, refKind(ref.APIVersion, ref.Kind), o.Namespace, ref.Name, "")
}

func (r *resolver) sliceService(o *object.Object) Related {
	name, _ := o.Labels.Lookup(serviceNameKey)
	return r.lookup(o, service, o.Namespace, name, "")
}

func (r *resolver) serviceSlices(o *object.Object) Related {
	f := filter(o, endpointSliceRes)
	f.Selector = labels.SelectorFromSet(labels.Set{serviceNameKey: o.Name})
	return Related{Cluster: o.Cluster, Filters: []planner.Filter{f}}
}
