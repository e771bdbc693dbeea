package api_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

var (
	nodesGVR     = gvr("", "v1", "nodes")
	eventsGVR    = gvr("", "v1", "events")
	pvcsGVR      = gvr("", "v1", "persistentvolumeclaims")
	pvsGVR       = gvr("", "v1", "persistentvolumes")
	ingressesGVR = gvr("networking.k8s.io", "v1", "ingresses")
)

// The nested fields compared, per kind: what a portal's pages of these
// kinds show, down to lists of objects in lists of objects.
var (
	nodeSelection = selection{
		"metadata": {"name": nil, "labels": nil, "uid": nil},
		"spec":     {"podCIDR": nil, "podCIDRs": nil, "unschedulable": nil, "providerID": nil, "taints": {"key": nil, "value": nil, "effect": nil}},
		"status": {"capacity": nil, "allocatable": nil, "addresses": {"type": nil, "address": nil},
			"conditions": {"type": nil, "status": nil, "reason": nil, "message": nil},
			"nodeInfo":   {"kubeletVersion": nil, "osImage": nil, "architecture": nil, "containerRuntimeVersion": nil},
			"images":     {"names": nil, "sizeBytes": nil}},
	}
	eventSelection = selection{
		"metadata":       {"name": nil, "namespace": nil},
		"involvedObject": {"kind": nil, "name": nil, "namespace": nil, "uid": nil, "apiVersion": nil, "fieldPath": nil},
		"reason":         nil, "message": nil, "count": nil, "firstTimestamp": nil, "lastTimestamp": nil,
		"source":             {"component": nil, "host": nil},
		"reportingComponent": nil, "reportingInstance": nil,
	}
	pvcSelection = selection{
		"spec": {"accessModes": nil, "storageClassName": nil, "volumeName": nil, "volumeMode": nil,
			"resources": {"requests": nil, "limits": nil}, "selector": {"matchLabels": nil,
				"matchExpressions": {"key": nil, "operator": nil, "values": nil}}},
		"status": {"phase": nil, "accessModes": nil, "capacity": nil},
	}
	pvSelection = selection{
		"spec": {"capacity": nil, "accessModes": nil, "persistentVolumeReclaimPolicy": nil, "storageClassName": nil,
			"mountOptions": nil, "volumeMode": nil, "hostPath": {"path": nil, "type": nil},
			"claimRef":     {"namespace": nil, "name": nil, "kind": nil},
			"nodeAffinity": {"required": {"nodeSelectorTerms": {"matchExpressions": {"key": nil, "operator": nil, "values": nil}}}}},
		"status": {"phase": nil, "message": nil},
	}
	ingressSelection = selection{
		"spec": {"ingressClassName": nil,
			"defaultBackend": {"service": {"name": nil, "port": {"number": nil, "name": nil}}},
			"rules": {"host": nil, "http": {"paths": {"path": nil, "pathType": nil,
				"backend": {"service": {"name": nil, "port": {"number": nil, "name": nil}}}}}},
			"tls": {"hosts": nil, "secretName": nil}},
		"status": {"loadBalancer": {"ingress": {"ip": nil, "hostname": nil, "ports": {"port": nil, "protocol": nil}}}},
	}
)

// TestTypedKindsFieldByField checks typed answers against the API
// servers' objects, field by field, for Nodes, Events, PersistentVolumeClaims,
// PersistentVolumes and Ingresses (Pods, Deployments and Services:
// TestTypedKindsOnRealClusters), each with its status written through the
// status subresource, as controllers write it.
func TestTypedKindsFieldByField(t *testing.T) {
	testcluster.SkipShort(t, "real clusters")
	env := testbed.Env(t)
	ns := freshNamespace("kinds")
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		createNamespace(t, d, ns)
		createTypedKindObjects(t, d, c.Name(), ns)
	}
	f := typedFleet(t, "nodes", "events", "persistentvolumeclaims", "persistentvolumes", "ingresses.networking.k8s.io")
	f.waitSynced(t)
	byNamespace := map[string]any{"namespaces": []string{ns}}
	byName := map[string]any{"nameContains": ns}
	for _, tc := range []struct {
		root   string
		gvr    schema.GroupVersionResource
		sel    selection
		filter map[string]any
		// ns and name select the servers' objects that filter selects.
		ns, name string
		want     int
	}{
		{"nodes", nodesGVR, nodeSelection, byName, "", ns, 6},
		{"events", eventsGVR, eventSelection, byNamespace, ns, "", 3},
		{"persistentvolumeclaims", pvcsGVR, pvcSelection, byNamespace, ns, "", 6},
		{"persistentvolumes", pvsGVR, pvSelection, byName, "", ns, 3},
		{"ingresses", ingressesGVR, ingressSelection, byNamespace, ns, "", 3},
	} {
		t.Run(tc.root, func(t *testing.T) {
			f.waitType(t, typeOfRoot(tc.root), "metadata", true)
			want := serverNodesOf(t, tc.gvr, tc.ns, tc.name, tc.sel, nil)
			if len(want) != tc.want {
				t.Fatalf("the servers hold %d objects, want %d: the test's objects were not all created", len(want), tc.want)
			}
			if missing := unsetLeaves(want, tc.sel, ""); len(missing) > 0 {
				t.Fatalf("no object of the servers has %v: the comparison would check nulls only", missing)
			}
			testcluster.Eventually(t, 30*time.Second, "typed answers equal to the servers' objects", func() (bool, string) {
				got, total := f.typedNodesOf(t, tc.root, tc.filter, tc.sel)
				diff := gocmp.Diff(want, got)
				return diff == "" && total == len(want), fmt.Sprintf("totalCount %d, want %d; (-server +answer):\n%s", total, len(want), diff)
			})
		})
	}
}

// createTypedKindObjects creates, in cluster c, two Nodes, an Event, two
// PersistentVolumeClaims (one bound), a PersistentVolume and an Ingress,
// named after ns (Nodes and PersistentVolumes are cluster-scoped), with
// their statuses.
func createTypedKindObjects(t *testing.T, d dynamic.Interface, c, ns string) {
	t.Helper()
	obj := func(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name}}}
		if namespace != "" {
			u.SetNamespace(namespace)
		}
		for k, v := range fields {
			u.Object[k] = v
		}
		return u
	}
	// withStatus creates u, then writes its status as a controller would.
	withStatus := func(r schema.GroupVersionResource, u *unstructured.Unstructured, status map[string]any) {
		t.Helper()
		created := create(t, d, r, u)
		created.Object["status"] = status
		if _, err := d.Resource(r).Namespace(u.GetNamespace()).UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update the status of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	cleanup := func(r schema.GroupVersionResource, name string) {
		t.Cleanup(func() { _ = d.Resource(r).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}

	for i, arch := range []string{"amd64", "arm64"} {
		name := fmt.Sprintf("%s-node-%d", ns, i)
		spec := map[string]any{"podCIDR": fmt.Sprintf("10.%d.%d.0/24", i, len(c)), "podCIDRs": []any{fmt.Sprintf("10.%d.%d.0/24", i, len(c))},
			"providerID": "test://" + c + "/" + name}
		if i == 1 {
			spec["unschedulable"] = true
			spec["taints"] = []any{map[string]any{"key": "dedicated", "value": "batch", "effect": "NoSchedule"},
				map[string]any{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}}
		}
		node := obj("v1", "Node", "", name, map[string]any{"spec": spec})
		node.SetLabels(map[string]string{"kubernetes.io/arch": arch, "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": c + "-a"})
		withStatus(nodesGVR, node, map[string]any{
			"capacity":    map[string]any{"cpu": "8", "memory": "32Gi", "pods": "110"},
			"allocatable": map[string]any{"cpu": "7800m", "memory": "31Gi", "pods": "110"},
			"addresses":   []any{map[string]any{"type": "InternalIP", "address": fmt.Sprintf("192.168.%d.10", i)}, map[string]any{"type": "Hostname", "address": name}},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
				"lastHeartbeatTime": "2026-11-28T10:00:00Z", "lastTransitionTime": "2026-11-28T09:00:00Z"}},
			"nodeInfo": map[string]any{"kubeletVersion": "v1.36.3", "osImage": "Debian GNU/Linux 13", "architecture": arch,
				"containerRuntimeVersion": "containerd://2.1.0", "kernelVersion": "6.12.0", "operatingSystem": "linux",
				"machineID": "m", "systemUUID": "s", "bootID": "b", "kubeProxyVersion": ""},
			"images": []any{map[string]any{"names": []any{"nginx:1.25", "docker.io/library/nginx@sha256:0123"}, "sizeBytes": int64(71_000_000_000)}},
		})
		cleanup(nodesGVR, name)
	}

	create(t, d, eventsGVR, obj("v1", "Event", ns, "web-0.18a2b3c4d5e6f708", map[string]any{
		"involvedObject": map[string]any{"kind": "Pod", "name": "web-0", "namespace": ns, "uid": "6a1f0c2e-0000-4000-8000-00000000000" + fmt.Sprint(len(c)),
			"apiVersion": "v1", "fieldPath": "spec.containers{web}"},
		"reason": "BackOff", "message": "Back-off restarting failed container web in pod web-0", "type": "Warning",
		"count": int64(7), "firstTimestamp": "2026-11-28T09:00:00Z", "lastTimestamp": "2026-11-28T09:30:00Z",
		"source":             map[string]any{"component": "kubelet", "host": ns + "-node-0"},
		"reportingComponent": "kubelet", "reportingInstance": ns + "-node-0",
	}))

	pv := ns + "-pv"
	withStatus(pvsGVR, obj("v1", "PersistentVolume", "", pv, map[string]any{"spec": map[string]any{
		"capacity": map[string]any{"storage": "5Gi"}, "accessModes": []any{"ReadWriteOnce", "ReadOnlyMany"},
		"persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast", "volumeMode": "Filesystem",
		"mountOptions": []any{"noatime", "nfsvers=4.1"},
		"hostPath":     map[string]any{"path": "/data/" + pv, "type": "DirectoryOrCreate"},
		"claimRef":     map[string]any{"namespace": ns, "name": "data", "kind": "PersistentVolumeClaim"},
		"nodeAffinity": map[string]any{"required": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
			map[string]any{"key": "kubernetes.io/hostname", "operator": "In", "values": []any{ns + "-node-0", ns + "-node-1"}}}}}}},
	}}), map[string]any{"phase": "Bound", "message": "bound to " + ns + "/data"})
	cleanup(pvsGVR, pv)

	withStatus(pvcsGVR, obj("v1", "PersistentVolumeClaim", ns, "data", map[string]any{"spec": map[string]any{
		"accessModes": []any{"ReadWriteOnce"}, "storageClassName": "fast", "volumeName": pv, "volumeMode": "Filesystem",
		"resources": map[string]any{"requests": map[string]any{"storage": "5Gi"}, "limits": map[string]any{"storage": "10Gi"}},
	}}), map[string]any{"phase": "Bound", "accessModes": []any{"ReadWriteOnce"}, "capacity": map[string]any{"storage": "5Gi"}})
	create(t, d, pvcsGVR, obj("v1", "PersistentVolumeClaim", ns, "scratch", map[string]any{"spec": map[string]any{
		"accessModes": []any{"ReadWriteMany"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
		"selector": map[string]any{"matchLabels": map[string]any{"tier": "scratch"},
			"matchExpressions": []any{map[string]any{"key": "zone", "operator": "NotIn", "values": []any{"eu-1"}}}},
	}}))

	// The default backend's port by number in c1, by name elsewhere.
	defaultPort := map[string]any{"name": "http"}
	if c == "c1" {
		defaultPort = map[string]any{"number": int64(8080)}
	}
	withStatus(ingressesGVR, obj("networking.k8s.io/v1", "Ingress", ns, "web", map[string]any{"spec": map[string]any{
		"ingressClassName": "nginx",
		"defaultBackend":   map[string]any{"service": map[string]any{"name": "fallback", "port": defaultPort}},
		"rules": []any{
			map[string]any{"host": c + ".example.com", "http": map[string]any{"paths": []any{
				map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": "web", "port": map[string]any{"name": "http"}}}},
				map[string]any{"path": "/api", "pathType": "Exact", "backend": map[string]any{"service": map[string]any{"name": "api", "port": map[string]any{"number": int64(9090)}}}},
			}}},
			map[string]any{"http": map[string]any{"paths": []any{
				map[string]any{"path": "/metrics", "pathType": "ImplementationSpecific", "backend": map[string]any{"service": map[string]any{"name": "metrics", "port": map[string]any{"number": int64(9100)}}}},
			}}},
		},
		"tls": []any{map[string]any{"hosts": []any{c + ".example.com"}, "secretName": "web-tls"}},
	}}), map[string]any{"loadBalancer": map[string]any{"ingress": []any{
		map[string]any{"ip": "203.0.113.7", "ports": []any{map[string]any{"port": int64(443), "protocol": "TCP"}}},
		map[string]any{"hostname": "lb." + c + ".example.com"}}}})
}

// unsetLeaves returns the paths of sel's leaves that no value of values
// (projections of objects) sets.
func unsetLeaves(values map[string]any, sel selection, prefix string) []string {
	var out []string
	for k, sub := range sel {
		var found []any
		for _, v := range values {
			found = append(found, members(v, k)...)
		}
		if sub == nil {
			if len(found) == 0 {
				out = append(out, prefix+k)
			}
			continue
		}
		inner := map[string]any{}
		for i, v := range found {
			inner[fmt.Sprint(i)] = v
		}
		out = append(out, unsetLeaves(inner, sub, prefix+k+".")...)
	}
	slices.Sort(out)
	return out
}

// members returns the non-null values of member k of v, an object or a
// list of them.
func members(v any, k string) []any {
	switch v := v.(type) {
	case map[string]any:
		if m, ok := v[k]; ok && m != nil {
			if list, ok := m.([]any); ok && len(list) == 0 {
				return nil
			}
			return []any{m}
		}
	case []any:
		var out []any
		for _, e := range v {
			out = append(out, members(e, k)...)
		}
		return out
	}
	return nil
}
