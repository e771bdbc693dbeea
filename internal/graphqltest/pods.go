package graphqltest

import (
	"fmt"
	"time"
	"unique"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// The shape of the realistic Pods of the portal benchmarks: each cluster
// has PodNamespaces namespaces, Pods of apps of 10 replicas, PodNodes nodes,
// a phase mix of mostly Running with some Pending, Succeeded and Failed,
// and the images of PodImages.
const (
	PodNamespaces = 100
	PodNodes      = 50
)

// PodImages are the images of the realistic Pods; each Pod runs one or two.
var PodImages = []string{"nginx:1.27.3", "redis:7.4.1", "envoyproxy/envoy:v1.32.2", "postgres:17.2",
	"ghcr.io/example/api:2.14.0", "ghcr.io/example/worker:2.14.0", "busybox:1.37", "prom/node-exporter:v1.8.2"}

// PodPhase returns the phase of realistic Pod i: about 1 in 100 Failed,
// 2 in 100 Pending, 2 in 100 Succeeded, the rest Running, independently of
// its namespace and node.
func PodPhase(i int) string {
	switch h := uint32(i) * 2654435761 >> 22 % 100; {
	case h < 1:
		return "Failed"
	case h < 3:
		return "Pending"
	case h < 5:
		return "Succeeded"
	}
	return "Running"
}

// RealisticPod returns Pod i of a cluster as the index holds it: about
// 2.5 KB of JSON (a Deployment's Pod with a sidecar on every other one,
// resources, probes, volumes, conditions and container statuses, no
// managedFields), with its labels, owner and creation time, which is base
// plus i seconds. Its namespace is ns-(i mod PodNamespaces): consecutive
// Pods, and so each app's, are spread over every namespace.
func RealisticPod(t *object.Type, cluster string, i int, base time.Time) *object.Object {
	return RealisticPodIn(t, cluster, fmt.Sprintf("ns-%02d", i%PodNamespaces), i, base)
}

// PodApp returns the value of realistic Pod i's label app: app-k for k =
// (i / 100) mod 200, so that each app has 100 consecutive Pods in every
// 20,000 of a cluster (10 ReplicaSets of 10), and a cluster of fewer than
// 20,000 Pods has only its first apps: 50 of them at 5,000 Pods.
func PodApp(i int) string { return fmt.Sprintf("app-%d", (i/PodNamespaces)%200) }

// PodAppNamespace returns the namespace of realistic Pod i's app, for a
// fleet laid out as Deployments are, each app's Pods in one namespace
// (RealisticPodIn): app-k lives in ns-(k mod PodNamespaces), so app-7 and
// app-107 share ns-07. A namespace then holds 1 % of a cluster's Pods from
// 10,000 Pods on, and at 5,000 Pods only ns-00 to ns-49 exist, 2 % each.
func PodAppNamespace(i int) string { return fmt.Sprintf("ns-%02d", (i/PodNamespaces)%PodNamespaces) }

// RealisticPodIn is RealisticPod in namespace ns.
func RealisticPodIn(t *object.Type, cluster, ns string, i int, base time.Time) *object.Object {
	app := PodApp(i)
	hash := fmt.Sprintf("%08x", uint32(i/PodNamespaces/200)*2654435761)
	name := fmt.Sprintf("%s-%s-%05d", app, hash[:5], i)
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	rsUID := fmt.Sprintf("%08x-1111-4000-8000-%012x", i/10, i/10)
	created := base.Add(time.Duration(i) * time.Second)
	phase := PodPhase(i)
	node := fmt.Sprintf("node-%02d", i%PodNodes)
	image := PodImages[i%len(PodImages)]
	restarts := 0
	if i%17 == 0 {
		restarts = i % 9
	}
	ready := phase == "Running"
	containers := fmt.Sprintf(`{"name":"main","image":%q,"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],`+
		`"env":[{"name":"APP","value":%q},{"name":"LOG_LEVEL","value":"info"}],`+
		`"resources":{"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},`+
		`"volumeMounts":[{"name":"config","mountPath":"/etc/app"},{"name":"kube-api-access","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],`+
		`"livenessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},`+
		`"readinessProbe":{"httpGet":{"path":"/readyz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":5,"successThreshold":1,"failureThreshold":3},`+
		`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}`, image, app)
	statuses := fmt.Sprintf(`{"name":"main","state":{"running":{"startedAt":%q}},"ready":%t,"restartCount":%d,"image":%q,`+
		`"imageID":"docker.io/library/%s@sha256:%064x","containerID":"containerd://%064x","started":%t}`,
		created.Add(3*time.Second).Format(time.RFC3339), ready, restarts, image, image, i, i, ready)
	if i%2 == 0 {
		sidecar := PodImages[(i/2+3)%len(PodImages)]
		containers += fmt.Sprintf(`,{"name":"sidecar","image":%q,"resources":{"requests":{"cpu":"10m","memory":"32Mi"}},`+
			`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}`, sidecar)
		statuses += fmt.Sprintf(`,{"name":"sidecar","state":{"running":{"startedAt":%q}},"ready":%t,"restartCount":0,"image":%q,`+
			`"imageID":"docker.io/library/%s@sha256:%064x","containerID":"containerd://%064x","started":%t}`,
			created.Add(3*time.Second).Format(time.RFC3339), ready, sidecar, sidecar, i+1, i+1, ready)
	}
	raw := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"generateName":"%s-%s-","namespace":%q,`+
		`"uid":%q,"resourceVersion":"%d","creationTimestamp":%q,"labels":{"app":%q,"pod-template-hash":%q,"tier":%q},`+
		`"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"},`+
		`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"%s-%s","uid":%q,"controller":true,"blockOwnerDeletion":true}]},`+
		`"spec":{"volumes":[{"name":"config","configMap":{"name":"%s-config","defaultMode":420}},{"name":"kube-api-access","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}],"defaultMode":420}}],`+
		`"containers":[%s],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default",`+
		`"nodeName":%q,"securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],`+
		`"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},`+
		`"status":{"phase":%q,"conditions":[{"type":"Initialized","status":"True","lastTransitionTime":%q},{"type":"Ready","status":"%s","lastTransitionTime":%q},`+
		`{"type":"PodScheduled","status":"True","lastTransitionTime":%q}],"hostIP":"10.0.%d.%d","podIP":"10.%d.%d.%d","startTime":%q,"containerStatuses":[%s],"qosClass":"Burstable"}}`,
		name, app, hash[:5], ns, uid, 1000+i, created.Format(time.RFC3339), app, hash[:5], []string{"fe", "be", "db"}[i%3],
		app, hash[:5], rsUID, app, containers, node,
		phase, created.Format(time.RFC3339), map[bool]string{true: "True", false: "False"}[ready], created.Add(4*time.Second).Format(time.RFC3339),
		created.Format(time.RFC3339), i%PodNodes/250, i%PodNodes%250+1, (i>>16)&255, (i>>8)&255, i&255, created.Add(time.Second).Format(time.RFC3339), statuses)
	// Interned as the informers intern them: each distinct value once.
	ns, app, hash = intern(ns), intern(app), intern(hash[:5])
	tier := intern([]string{"fe", "be", "db"}[i%3])
	o := &object.Object{
		Cluster: intern(cluster), Type: t, Namespace: ns, Name: name,
		UID:             types.UID(uid),
		ResourceVersion: fmt.Sprint(1000 + i),
		Labels:          object.Labels{{Key: "app", Value: app}, {Key: "pod-template-hash", Value: hash}, {Key: "tier", Value: tier}},
		Owners:          []object.OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash, UID: types.UID(rsUID), Controller: true}},
	}
	o.SetCreated(created)
	o.SetRaw(raw)
	return o
}

func intern(s string) string { return unique.Make(s).Value() }

// Conjunction returns issue 31's conjunction page over a fleet of
// realistic Pods laid out by app (PodAppNamespace), perCluster in each
// cluster: the namespace of app-7 and the label selector
// "app=app-7,tier=fe", the intersection of a small label (2 % of the Pods
// at 5,000 per cluster, 1 % at 10,000, 0.5 % from 20,000) and a large one
// (a third), which the namespace does not narrow. A fleet too small to
// have app-7 (fewer than 800 Pods per cluster) gets its last app instead.
func Conjunction(perCluster int) (namespace, selector string) {
	i := min(700, max(perCluster-1, 0)/PodNamespaces*PodNamespaces)
	return PodAppNamespace(i), "app=" + PodApp(i) + ",tier=fe"
}
