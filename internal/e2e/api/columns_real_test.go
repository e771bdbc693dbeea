package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// columnKind is a type whose columns the test compares with the server's
// Table.
type columnKind struct {
	resource string // as configured
	gvr      schema.GroupVersionResource
	kind     string // as filters name it
	// namespaced types' objects are in the test's namespace; the
	// cluster-scoped ones carry the test's label.
	namespaced bool
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// columnKinds are every kind whose columns TestColumnsOnRealClusters
// compares: the built-in kinds issue 15 names, a custom resource with
// printer columns and one without.
var columnKinds = []columnKind{
	{"pods", gvr("", "v1", "pods"), "Pod", true},
	{"deployments.apps", gvr("apps", "v1", "deployments"), "Deployment.apps", true},
	{"replicasets.apps", gvr("apps", "v1", "replicasets"), "ReplicaSet.apps", true},
	{"statefulsets.apps", gvr("apps", "v1", "statefulsets"), "StatefulSet.apps", true},
	{"daemonsets.apps", gvr("apps", "v1", "daemonsets"), "DaemonSet.apps", true},
	{"jobs.batch", gvr("batch", "v1", "jobs"), "Job.batch", true},
	{"cronjobs.batch", gvr("batch", "v1", "cronjobs"), "CronJob.batch", true},
	{"services", gvr("", "v1", "services"), "Service", true},
	{"ingresses.networking.k8s.io", gvr("networking.k8s.io", "v1", "ingresses"), "Ingress.networking.k8s.io", true},
	{"configmaps", gvr("", "v1", "configmaps"), "ConfigMap", true},
	{"secrets", gvr("", "v1", "secrets"), "Secret", true},
	{"namespaces", gvr("", "v1", "namespaces"), "Namespace", false},
	{"nodes", gvr("", "v1", "nodes"), "Node", false},
	{"persistentvolumeclaims", gvr("", "v1", "persistentvolumeclaims"), "PersistentVolumeClaim", true},
	{"persistentvolumes", gvr("", "v1", "persistentvolumes"), "PersistentVolume", false},
	{"events", gvr("", "v1", "events"), "Event", true},
	// The same Events, through events.k8s.io (fields of other names).
	{"events.events.k8s.io", gvr("events.k8s.io", "v1", "events"), "Event.events.k8s.io", true},
	{"widgets.columns.example.com", gvr("columns.example.com", "v1", "widgets"), "Widget.columns.example.com", true},
	{"gadgets.columns.example.com", gvr("columns.example.com", "v1", "gadgets"), "Gadget.columns.example.com", true},
}

// columnLabel marks the objects of one run of the test.
const columnLabel = "fleetcache-columns"

// columnObjects creates, in ns and with the label columnLabel=ns, objects
// of every kind of columnKinds whose cells are not trivial: statuses are
// set through the status subresource, some objects are being deleted.
type columnObjects struct {
	t   *testing.T
	d   dynamic.Interface
	ns  string
	now time.Time
}

func (c *columnObjects) ts(ago time.Duration) string {
	return c.now.Add(-ago).UTC().Format(time.RFC3339)
}

// create creates an object of kind k named name with the given top-level
// fields (besides metadata), then sets status, if any, through the status
// subresource.
func (c *columnObjects) create(k columnKind, apiVersion, kind, name string, fields, status map[string]any, meta ...map[string]any) *unstructured.Unstructured {
	c.t.Helper()
	md := map[string]any{"name": name, "labels": map[string]any{columnLabel: c.ns}}
	if k.namespaced {
		md["namespace"] = c.ns
	}
	for _, m := range meta {
		for key, v := range m {
			md[key] = v
		}
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for key, v := range fields {
		obj[key] = v
	}
	u := create(c.t, c.d, k.gvr, &unstructured.Unstructured{Object: obj})
	if status == nil {
		return u
	}
	u.Object["status"] = status
	out, err := c.d.Resource(k.gvr).Namespace(u.GetNamespace()).UpdateStatus(c.t.Context(), u, metav1.UpdateOptions{})
	if err != nil {
		c.t.Fatalf("update status of %s %s: %v", k.resource, name, err)
	}
	return out
}

// deleteKept deletes an object that a finalizer keeps: it stays, being
// deleted.
func (c *columnObjects) deleteKept(k columnKind, name string) {
	c.t.Helper()
	ns := ""
	if k.namespaced {
		ns = c.ns
	}
	if err := c.d.Resource(k.gvr).Namespace(ns).Delete(c.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatalf("delete %s %s: %v", k.resource, name, err)
	}
}

func kindOf(resource string) columnKind {
	for _, k := range columnKinds {
		if k.resource == resource {
			return k
		}
	}
	panic("no column kind " + resource)
}

func containers(names ...string) []any {
	var out []any
	for _, n := range names {
		out = append(out, map[string]any{"name": n, "image": "registry.example/" + n + ":1"})
	}
	return out
}

var keep = map[string]any{"finalizers": []any{"example.com/keep"}}

func (c *columnObjects) pods() {
	k := kindOf("pods")
	pod := func(name string, spec, status map[string]any, meta ...map[string]any) {
		c.create(k, "v1", "Pod", name, map[string]any{"spec": spec}, status, meta...)
	}
	running := map[string]any{"running": map[string]any{"startedAt": c.ts(time.Minute)}}
	lastError := func(ago time.Duration) map[string]any {
		return map[string]any{"terminated": map[string]any{"exitCode": int64(1), "reason": "Error", "finishedAt": c.ts(ago)}}
	}
	status := func(name string, ready bool, restarts int64, state, last map[string]any) map[string]any {
		s := map[string]any{"name": name, "image": "registry.example/" + name + ":1", "imageID": "", "ready": ready,
			"restartCount": restarts, "state": state}
		if last != nil {
			s["lastState"] = last
		}
		return s
	}
	pod("running", map[string]any{"containers": containers("web", "proxy"), "nodeName": "node-1",
		"readinessGates": []any{map[string]any{"conditionType": "example.com/gate-a"}, map[string]any{"conditionType": "example.com/gate-b"}}},
		map[string]any{"phase": "Running", "podIP": "10.0.0.5", "podIPs": []any{map[string]any{"ip": "10.0.0.5"}},
			"conditions":        []any{map[string]any{"type": "Ready", "status": "False"}, map[string]any{"type": "example.com/gate-a", "status": "True"}},
			"containerStatuses": []any{status("web", true, 3, running, lastError(10*time.Minute)), status("proxy", false, 0, running, nil)}})
	pod("init-waiting", map[string]any{"containers": containers("web"), "initContainers": containers("migrate", "seed")},
		map[string]any{"phase": "Pending", "initContainerStatuses": []any{
			status("migrate", false, 0, map[string]any{"terminated": map[string]any{"exitCode": int64(0), "reason": "Completed", "finishedAt": c.ts(time.Minute)}}, nil),
			status("seed", false, 0, map[string]any{"waiting": map[string]any{"reason": "PodInitializing"}}, nil)},
			"containerStatuses": []any{status("web", false, 0, map[string]any{"waiting": map[string]any{"reason": "PodInitializing"}}, nil)}})
	pod("init-failed", map[string]any{"containers": containers("web"), "initContainers": containers("migrate")},
		map[string]any{"phase": "Pending", "initContainerStatuses": []any{
			status("migrate", false, 2, map[string]any{"terminated": map[string]any{"exitCode": int64(1), "reason": "Error", "finishedAt": c.ts(time.Minute)}}, lastError(3*time.Minute))},
			"containerStatuses": []any{status("web", false, 0, map[string]any{"waiting": map[string]any{"reason": "PodInitializing"}}, nil)}})
	pod("crashing", map[string]any{"containers": containers("web")},
		map[string]any{"phase": "Running", "containerStatuses": []any{
			status("web", false, 5, map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}}, lastError(2*time.Hour))}})
	pod("completed", map[string]any{"containers": containers("job"), "restartPolicy": "Never"},
		map[string]any{"phase": "Succeeded", "containerStatuses": []any{
			status("job", false, 0, map[string]any{"terminated": map[string]any{"exitCode": int64(0), "reason": "Completed", "finishedAt": c.ts(time.Minute)}}, nil)}})
	pod("killed", map[string]any{"containers": containers("web"), "restartPolicy": "Never"},
		map[string]any{"phase": "Failed", "containerStatuses": []any{
			status("web", false, 0, map[string]any{"terminated": map[string]any{"exitCode": int64(137), "signal": int64(9), "finishedAt": c.ts(time.Minute)}}, nil)}})
	sidecar := containers("mesh")
	sidecar[0].(map[string]any)["restartPolicy"] = "Always"
	started := status("mesh", true, 1, running, lastError(20*time.Minute))
	started["started"] = true
	pod("sidecar", map[string]any{"containers": containers("web"), "initContainers": sidecar},
		map[string]any{"phase": "Running", "conditions": []any{map[string]any{"type": "Initialized", "status": "True"}, map[string]any{"type": "Ready", "status": "True"}},
			"initContainerStatuses": []any{started},
			"containerStatuses":     []any{status("web", true, 0, running, nil)}})
	pod("evicted", map[string]any{"containers": containers("web")},
		map[string]any{"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."})
	pod("half-done", map[string]any{"containers": containers("job", "web")},
		map[string]any{"phase": "Running", "containerStatuses": []any{
			status("job", false, 0, map[string]any{"terminated": map[string]any{"exitCode": int64(0), "reason": "Completed", "finishedAt": c.ts(time.Minute)}}, nil),
			status("web", true, 0, running, nil)}})
	waitingSidecar := containers("mesh", "migrate")
	waitingSidecar[0].(map[string]any)["restartPolicy"] = "Always"
	notStarted := status("mesh", false, 2, map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}}, lastError(5*time.Minute))
	notStarted["started"] = false
	pod("sidecar-crashing", map[string]any{"containers": containers("web"), "initContainers": waitingSidecar},
		map[string]any{"phase": "Pending", "initContainerStatuses": []any{notStarted,
			status("migrate", false, 0, map[string]any{"waiting": map[string]any{"reason": "PodInitializing"}}, nil)}})
	pod("init-running", map[string]any{"containers": containers("web"), "initContainers": containers("migrate", "seed")},
		map[string]any{"phase": "Pending", "initContainerStatuses": []any{
			status("migrate", false, 1, running, lastError(time.Hour)),
			status("seed", false, 0, map[string]any{"waiting": map[string]any{"reason": "PodInitializing"}}, nil)}})
	pod("deleting", map[string]any{"containers": containers("web"), "nodeName": "node-1"},
		map[string]any{"phase": "Running", "containerStatuses": []any{status("web", true, 0, running, nil)}}, keep)
	c.deleteKept(k, "deleting")
	pod("pending", map[string]any{"containers": containers("web")}, nil)
	pod("nominated", map[string]any{"containers": containers("web")}, map[string]any{"phase": "Pending", "nominatedNodeName": "node-2"})
	pod("gated", map[string]any{"containers": containers("web"), "schedulingGates": []any{map[string]any{"name": "example.com/wait"}}}, nil)
}

func (c *columnObjects) workloads() {
	template := func(names ...string) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": containers(names...)}}
	}
	sel := map[string]any{"matchLabels": map[string]any{"app": "web"},
		"matchExpressions": []any{map[string]any{"key": "tier", "operator": "NotIn", "values": []any{"db"}}}}
	plainSel := map[string]any{"matchLabels": map[string]any{"app": "web"}}
	c.create(kindOf("deployments.apps"), "apps/v1", "Deployment", "web",
		map[string]any{"spec": map[string]any{"replicas": int64(3), "selector": sel, "template": template("web", "proxy")}},
		map[string]any{"replicas": int64(3), "readyReplicas": int64(2), "updatedReplicas": int64(3), "availableReplicas": int64(2)})
	c.create(kindOf("deployments.apps"), "apps/v1", "Deployment", "idle",
		map[string]any{"spec": map[string]any{"selector": plainSel, "template": template("web")}}, nil)
	c.create(kindOf("replicasets.apps"), "apps/v1", "ReplicaSet", "web-5d8f",
		map[string]any{"spec": map[string]any{"replicas": int64(2), "selector": plainSel, "template": template("web")}},
		map[string]any{"replicas": int64(2), "readyReplicas": int64(1), "availableReplicas": int64(1), "fullyLabeledReplicas": int64(2)})
	c.create(kindOf("statefulsets.apps"), "apps/v1", "StatefulSet", "db",
		map[string]any{"spec": map[string]any{"replicas": int64(3), "serviceName": "db", "selector": plainSel, "template": template("db", "backup")}},
		map[string]any{"replicas": int64(3), "readyReplicas": int64(1), "currentReplicas": int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(1)})
	dsTemplate := template("agent")
	dsTemplate["spec"].(map[string]any)["nodeSelector"] = map[string]any{"kubernetes.io/os": "linux", "disk": "ssd"}
	c.create(kindOf("daemonsets.apps"), "apps/v1", "DaemonSet", "agent",
		map[string]any{"spec": map[string]any{"selector": sel, "template": dsTemplate}},
		map[string]any{"desiredNumberScheduled": int64(4), "currentNumberScheduled": int64(3), "numberReady": int64(2),
			"updatedNumberScheduled": int64(3), "numberAvailable": int64(2), "numberMisscheduled": int64(0)})

	jobs := kindOf("jobs.batch")
	jobTemplate := func() map[string]any {
		return map[string]any{"spec": map[string]any{"containers": containers("task"), "restartPolicy": "Never"}}
	}
	c.create(jobs, "batch/v1", "Job", "running",
		map[string]any{"spec": map[string]any{"completions": int64(3), "template": jobTemplate()}},
		map[string]any{"startTime": c.ts(7 * time.Minute), "active": int64(1), "succeeded": int64(1), "ready": int64(1)})
	c.create(jobs, "batch/v1", "Job", "done",
		map[string]any{"spec": map[string]any{"completions": int64(1), "template": jobTemplate()}},
		map[string]any{"startTime": c.ts(time.Hour), "completionTime": c.ts(50 * time.Minute), "succeeded": int64(1),
			"conditions": []any{
				map[string]any{"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": c.ts(50 * time.Minute)},
				map[string]any{"type": "Complete", "status": "True", "lastTransitionTime": c.ts(50 * time.Minute)}}})
	c.create(jobs, "batch/v1", "Job", "parallel",
		map[string]any{"spec": map[string]any{"parallelism": int64(3), "template": jobTemplate()}}, nil)
	c.create(jobs, "batch/v1", "Job", "suspended",
		map[string]any{"spec": map[string]any{"suspend": true, "template": jobTemplate()}},
		map[string]any{"conditions": []any{map[string]any{"type": "Suspended", "status": "True", "lastTransitionTime": c.ts(time.Minute)}}})

	cronJobs := kindOf("cronjobs.batch")
	c.create(cronJobs, "batch/v1", "CronJob", "nightly",
		map[string]any{"spec": map[string]any{"schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "suspend": true,
			"jobTemplate": map[string]any{"spec": map[string]any{"template": jobTemplate()}}}},
		map[string]any{"lastScheduleTime": c.ts(26 * time.Hour), "active": []any{
			map[string]any{"apiVersion": "batch/v1", "kind": "Job", "namespace": c.ns, "name": "nightly-1"}}})
	c.create(cronJobs, "batch/v1", "CronJob", "never",
		map[string]any{"spec": map[string]any{"schedule": "*/5 * * * *",
			"jobTemplate": map[string]any{"spec": map[string]any{"template": jobTemplate()}}}}, nil)
}

func (c *columnObjects) network() {
	svc := kindOf("services")
	port := func(name string, p int64, protocol string) map[string]any {
		return map[string]any{"name": name, "port": p, "protocol": protocol}
	}
	c.create(svc, "v1", "Service", "web", map[string]any{"spec": map[string]any{"selector": map[string]any{"app": "web", "tier": "fe"},
		"ports": []any{port("http", 80, "TCP"), port("dns", 53, "UDP")}, "externalIPs": []any{"192.0.2.7"}}}, nil)
	c.create(svc, "v1", "Service", "nodes", map[string]any{"spec": map[string]any{"type": "NodePort", "ports": []any{port("http", 8080, "TCP")}}}, nil)
	c.create(svc, "v1", "Service", "lb", map[string]any{"spec": map[string]any{"type": "LoadBalancer", "externalIPs": []any{"192.0.2.9"},
		"selector": map[string]any{"app": "lb"}, "ports": []any{port("https", 443, "TCP")}}},
		map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.4"}, map[string]any{"hostname": "lb.example.com"}}}})
	c.create(svc, "v1", "Service", "lb-pending", map[string]any{"spec": map[string]any{"type": "LoadBalancer", "ports": []any{port("https", 443, "TCP")}}}, nil)
	c.create(svc, "v1", "Service", "external", map[string]any{"spec": map[string]any{"type": "ExternalName", "externalName": "db.example.com"}}, nil)
	c.create(svc, "v1", "Service", "headless", map[string]any{"spec": map[string]any{"clusterIP": "None", "selector": map[string]any{"app": "db"},
		"ports": []any{port("pg", 5432, "TCP")}}}, nil)

	ing := kindOf("ingresses.networking.k8s.io")
	rule := func(host string) map[string]any {
		return map[string]any{"host": host, "http": map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix",
			"backend": map[string]any{"service": map[string]any{"name": "web", "port": map[string]any{"number": int64(80)}}}}}}}
	}
	c.create(ing, "networking.k8s.io/v1", "Ingress", "many", map[string]any{"spec": map[string]any{"ingressClassName": "nginx",
		"tls":   []any{map[string]any{"hosts": []any{"a.example.com"}, "secretName": "tls"}},
		"rules": []any{rule("a.example.com"), rule(""), rule("b.example.com"), rule("c.example.com"), rule("d.example.com")}}},
		map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.8"}, map[string]any{"hostname": "in.example.com"}}}})
	c.create(ing, "networking.k8s.io/v1", "Ingress", "default", map[string]any{"spec": map[string]any{
		"defaultBackend": map[string]any{"service": map[string]any{"name": "web", "port": map[string]any{"number": int64(80)}}}}}, nil)
}

func (c *columnObjects) config() {
	c.create(kindOf("configmaps"), "v1", "ConfigMap", "settings", map[string]any{"data": map[string]any{"a": "1", "b": "2"},
		"binaryData": map[string]any{"c": "AAE="}}, nil)
	c.create(kindOf("configmaps"), "v1", "ConfigMap", "empty", nil, nil)
	c.create(kindOf("secrets"), "v1", "Secret", "opaque", map[string]any{"data": map[string]any{"user": "dXNlcg==", "password": "cHc="}}, nil)
	c.create(kindOf("secrets"), "v1", "Secret", "tls", map[string]any{"type": "kubernetes.io/tls",
		"data": map[string]any{"tls.crt": "Y3J0", "tls.key": "a2V5", "ca.crt": "Y2E="}}, nil)
}

func (c *columnObjects) clusterScoped() {
	ns := kindOf("namespaces")
	c.create(ns, "v1", "Namespace", c.ns, nil, nil)
	c.create(ns, "v1", "Namespace", c.ns+"-gone", nil, nil)
	c.deleteKept(ns, c.ns+"-gone")

	nodes := kindOf("nodes")
	c.create(nodes, "v1", "Node", c.ns+"-a", nil, map[string]any{
		"conditions": []any{map[string]any{"type": "MemoryPressure", "status": "False"}, map[string]any{"type": "Ready", "status": "True"}},
		"addresses": []any{map[string]any{"type": "Hostname", "address": "a"}, map[string]any{"type": "InternalIP", "address": "10.1.0.1"},
			map[string]any{"type": "ExternalIP", "address": "198.51.100.1"}},
		"nodeInfo": map[string]any{"kubeletVersion": "v1.36.3", "osImage": "Debian GNU/Linux 13", "kernelVersion": "6.12.0",
			"containerRuntimeVersion": "containerd://2.1.0", "machineID": "", "systemUUID": "", "bootID": "", "kubeProxyVersion": "",
			"operatingSystem": "linux", "architecture": "amd64"}},
		map[string]any{"labels": map[string]any{columnLabel: c.ns, "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "",
			"kubernetes.io/role": "infra"}})
	c.create(nodes, "v1", "Node", c.ns+"-b", map[string]any{"spec": map[string]any{"unschedulable": true}},
		map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "Unknown"}},
			"addresses": []any{map[string]any{"type": "InternalIP", "address": "10.1.0.2"}}})
	c.create(nodes, "v1", "Node", c.ns+"-c", nil, nil)

	pvs := kindOf("persistentvolumes")
	pv := func(name string, spec map[string]any) map[string]any {
		spec["hostPath"] = map[string]any{"path": "/data/" + name}
		return map[string]any{"spec": spec}
	}
	c.create(pvs, "v1", "PersistentVolume", c.ns+"-bound", pv(c.ns+"-bound", map[string]any{"capacity": map[string]any{"storage": "2048Mi"},
		"accessModes": []any{"ReadWriteMany", "ReadWriteOnce"}, "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast",
		"claimRef": map[string]any{"namespace": c.ns, "name": "data"}}),
		map[string]any{"phase": "Bound"})
	c.create(pvs, "v1", "PersistentVolume", c.ns+"-failed", pv(c.ns+"-failed", map[string]any{"capacity": map[string]any{"storage": "1Gi"},
		"accessModes": []any{"ReadOnlyMany"}, "volumeMode": "Block"}),
		map[string]any{"phase": "Failed", "reason": "Recycling failed"}, map[string]any{"annotations": map[string]any{"volume.beta.kubernetes.io/storage-class": "old"}})

	pvcs := kindOf("persistentvolumeclaims")
	req := map[string]any{"requests": map[string]any{"storage": "1Gi"}}
	c.create(pvcs, "v1", "PersistentVolumeClaim", "data", map[string]any{"spec": map[string]any{"volumeName": c.ns + "-bound",
		"accessModes": []any{"ReadWriteOnce"}, "resources": req, "storageClassName": "fast"}},
		map[string]any{"phase": "Bound", "accessModes": []any{"ReadWriteOnce", "ReadWriteMany"}, "capacity": map[string]any{"storage": "2Gi"}})
	c.create(pvcs, "v1", "PersistentVolumeClaim", "waiting", map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteOncePod"},
		"resources": req, "volumeMode": "Block"}}, nil)
	c.create(pvcs, "v1", "PersistentVolumeClaim", "going", map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"},
		"resources": req}}, nil, keep)
	c.deleteKept(pvcs, "going")
}

func (c *columnObjects) events() {
	ev := kindOf("events")
	c.create(ev, "v1", "Event", "running.1", map[string]any{
		"involvedObject": map[string]any{"kind": "Pod", "namespace": c.ns, "name": "running", "fieldPath": "spec.containers{web}"},
		"reason":         "BackOff", "message": "  Back-off restarting failed container  ", "type": "Warning",
		"source":         map[string]any{"component": "kubelet", "host": "node-1"},
		"firstTimestamp": c.ts(3 * time.Hour), "lastTimestamp": c.ts(4 * time.Minute), "count": int64(12)}, nil)
	micro := func(ago time.Duration) string {
		return c.now.Add(-ago).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	}
	c.create(ev, "v1", "Event", "web.2", map[string]any{
		"involvedObject": map[string]any{"kind": "Deployment", "namespace": c.ns, "name": "web"},
		"reason":         "ScalingReplicaSet", "message": "Scaled up", "type": "Normal", "action": "Scale",
		"eventTime": micro(90 * time.Minute), "reportingComponent": "deployment-controller", "reportingInstance": "cm-1",
		"series": map[string]any{"count": int64(4), "lastObservedTime": micro(30 * time.Second)}}, nil)
	c.create(ev, "v1", "Event", "ns.3", map[string]any{
		"involvedObject": map[string]any{"kind": "Namespace", "namespace": c.ns},
		"reason":         "Hello", "message": "hi", "type": "Normal", "source": map[string]any{"component": "tester"},
		"firstTimestamp": c.ts(time.Minute)}, nil)
}

// widgetCRD is a CustomResourceDefinition with printer columns of every
// type, one of them wide, and the age column the test leaves out.
func widgetCRD(plural, kind string, printerColumns []any) map[string]any {
	version := map[string]any{"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	if printerColumns != nil {
		version["additionalPrinterColumns"] = printerColumns
	}
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".columns.example.com"},
		"spec": map[string]any{"group": "columns.example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.TrimSuffix(plural, "s"), "kind": kind, "listKind": kind + "List"},
			"versions": []any{version}}}
}

var crdGVR = gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions")

func printerColumn(name, typ, path string, priority int64) map[string]any {
	return map[string]any{"name": name, "type": typ, "jsonPath": path, "priority": priority}
}

// customResources creates the CRDs (once per cluster), waits until they
// are served, and creates widgets and gadgets.
func (c *columnObjects) customResources() {
	crds := []map[string]any{
		widgetCRD("widgets", "Widget", []any{
			printerColumn("Color", "string", ".spec.color", 0),
			printerColumn("Replicas", "integer", ".spec.replicas", 0),
			printerColumn("Ratio", "number", ".spec.ratio", 0),
			printerColumn("Enabled", "boolean", ".spec.enabled", 0),
			printerColumn("Started", "date", ".status.startedAt", 0),
			printerColumn("Age", "date", ".metadata.creationTimestamp", 0),
			printerColumn("Owner", "string", ".spec.owner.name", 1),
			printerColumn("Tags", "string", ".spec.tags", 1),
		}),
		widgetCRD("gadgets", "Gadget", nil),
	}
	for _, crd := range crds {
		create(c.t, c.d, crdGVR, &unstructured.Unstructured{Object: crd})
	}
	for _, k := range []columnKind{kindOf("widgets.columns.example.com"), kindOf("gadgets.columns.example.com")} {
		testcluster.Eventually(c.t, 30*time.Second, "the CRD of "+k.resource+" to be served", func() (bool, string) {
			_, err := c.d.Resource(k.gvr).Namespace(c.ns).List(c.t.Context(), metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
	w := kindOf("widgets.columns.example.com")
	c.create(w, "columns.example.com/v1", "Widget", "full", map[string]any{
		"spec": map[string]any{"color": "blue", "replicas": int64(3), "ratio": 0.75, "enabled": true,
			"owner": map[string]any{"name": "team-a"}, "tags": []any{"x", "y"}},
		"status": map[string]any{"startedAt": c.ts(49 * time.Hour)}}, nil)
	c.create(w, "columns.example.com/v1", "Widget", "sparse", map[string]any{"spec": map[string]any{"color": "red"}}, nil)
	c.create(w, "columns.example.com/v1", "Widget", "odd", map[string]any{
		"spec":   map[string]any{"color": int64(5), "replicas": 2.7, "ratio": int64(2), "enabled": "yes", "owner": map[string]any{"name": int64(7)}},
		"status": map[string]any{"startedAt": "not a date"}}, nil)
	c.create(kindOf("gadgets.columns.example.com"), "columns.example.com/v1", "Gadget", "g", map[string]any{"spec": map[string]any{"size": int64(1)}}, nil)
}

// serverRow is a row of the API server's Table: its cells by column, in
// order, the age left out.
type serverRow struct {
	name  string
	cells []column
}

type column struct{ Name, Value string }

// fetchTable lists kind k's test objects in ns of cluster c as the API
// server's Table (what kubectl get prints).
func fetchTable(t *testing.T, c *testcluster.Cluster, k columnKind, ns string) metav1.Table {
	t.Helper()
	cfg := c.AdminConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/" + k.gvr.Version
	if k.gvr.Group != "" {
		path = "/apis/" + k.gvr.Group + "/" + k.gvr.Version
	}
	if k.namespaced {
		path += "/namespaces/" + ns
	}
	path += "/" + k.gvr.Resource + "?includeObject=None&labelSelector=" + columnLabel + "%3D" + ns
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(res.Body).Decode(&table); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("table of %s: status %d, %v", k.resource, res.StatusCode, err)
	}
	return table
}

// serverTable lists kind k's test objects as the API server's Table.
func serverTable(t *testing.T, c *testcluster.Cluster, k columnKind, ns string) []serverRow {
	t.Helper()
	table := fetchTable(t, c, k, ns)
	var out []serverRow
	for _, r := range table.Rows {
		var row serverRow
		for i, def := range table.ColumnDefinitions {
			v := cellText(t, r.Cells[i])
			if def.Name == "Name" {
				row.name = v
			}
			if def.Name == "Age" {
				continue
			}
			row.cells = append(row.cells, column{def.Name, v})
		}
		out = append(out, row)
	}
	return out
}

// cellText prints a Table cell as kubectl does: null as <none>.
func cellText(t *testing.T, v any) string {
	switch v := v.(type) {
	case nil:
		return "<none>"
	case string:
		return v
	case bool, int64, float64:
		return fmt.Sprint(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// relative matches the durations kubectl prints ("5m", "3h10m", "2d"),
// alone or in "(5m ago)": cells that hold one are compared without it.
var relative = regexp.MustCompile(`^(\d+[smhdy])+$|\((\d+[smhdy])+ ago\)`)

func withoutDurations(rows []serverRow) []serverRow {
	out := make([]serverRow, len(rows))
	for i, r := range rows {
		out[i] = serverRow{name: r.name, cells: make([]column, len(r.cells))}
		for j, c := range r.cells {
			out[i].cells[j] = column{c.Name, relative.ReplaceAllString(c.Value, "<duration>")}
		}
	}
	return out
}

// apiTable lists the columns of kind k's test objects in cluster through
// GraphQL.
func (f *fleet) apiTable(t *testing.T, cluster string, k columnKind, ns string) []serverRow {
	t.Helper()
	var got struct {
		Resources struct {
			Edges []struct {
				Node struct {
					Resource, Name string
					Columns        []column
				}
			}
		}
	}
	f.mustQuery(t, `query($f: ResourceFilter) { resources(filter: $f, first: 100) { edges { node { resource name columns { name value } } } } }`,
		map[string]any{"f": map[string]any{"clusters": []any{cluster}, "kinds": []any{k.kind}, "labelSelector": columnLabel + "=" + ns}}, &got)
	out := []serverRow{}
	for _, e := range got.Resources.Edges {
		// "Event" is a kind of two groups.
		if e.Node.Resource == k.resource {
			out = append(out, serverRow{name: e.Node.Name, cells: e.Node.Columns})
		}
	}
	return out
}

// startColumnFleet creates, in ns of every cluster, objects of every kind
// of columnKinds whose cells are not trivial, then starts a fleet that
// caches those kinds (Secrets' data too) and waits until it is synced.
func startColumnFleet(t *testing.T, ns string) *fleet {
	t.Helper()
	env := testbed.Env(t)
	for _, c := range env.Clusters() {
		objs := &columnObjects{t: t, d: dyn(t, c), ns: ns, now: time.Now()}
		objs.clusterScoped()
		objs.pods()
		objs.workloads()
		objs.network()
		objs.config()
		objs.events()
		objs.customResources()
	}
	var resources []string
	for _, k := range columnKinds {
		resources = append(resources, k.resource)
	}
	opts := apptest.Informers(resources...)
	opts.CacheSecretData = true
	f := newFleet(t, app.Options{Informers: opts})
	f.waitSynced(t)
	return f
}

// TestColumnsOnRealClusters creates objects of every kind of columnKinds
// in every cluster (three), with statuses that make their cells non-trivial, and
// checks that Resource.columns is what the API servers' Tables print,
// ages aside and relative durations compared without their text.
func TestColumnsOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("columns")
	clusters := env.Clusters()
	f := startColumnFleet(t, ns)

	compared := map[string]int{}
	byName := func(a, b serverRow) int { return strings.Compare(a.name, b.name) }
	names := func(rows []serverRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.name)
		}
		return out
	}
	for _, c := range clusters {
		for _, k := range columnKinds {
			// Every object was created before the fleet started: once the
			// index holds them all, their columns are final.
			var want, got []serverRow
			testcluster.Eventually(t, 30*time.Second, "the index to hold the "+k.resource+" of "+c.Name(), func() (bool, string) {
				want, got = serverTable(t, c, k, ns), f.apiTable(t, c.Name(), k, ns)
				slices.SortFunc(want, byName)
				slices.SortFunc(got, byName)
				if len(want) == 0 {
					return false, "the server lists none"
				}
				diff := gocmp.Diff(names(want), names(got))
				return diff == "", "(-server +api):\n" + diff
			})
			if diff := gocmp.Diff(withoutDurations(want), withoutDurations(got), gocmp.AllowUnexported(serverRow{})); diff != "" {
				t.Errorf("columns of %s in %s (-server +api):\n%s", k.resource, c.Name(), diff)
				continue
			}
			compared[k.kind] += len(want)
		}
	}
	for _, k := range columnKinds {
		if compared[k.kind] < len(clusters) {
			t.Errorf("%s: compared %d objects, want at least one per cluster", k.kind, compared[k.kind])
		}
	}
	t.Logf("compared the columns of %v objects", compared)
}
