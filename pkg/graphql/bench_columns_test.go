package graphql

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// benchPod is a typical Pod of a Deployment as the informers store it
// (without managedFields): two containers, one restarted, with probes,
// resources, volumes and a full status. About 3 KB of JSON.
const benchPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$NAME","namespace":"web","uid":"6f0c2b1e-$N4-4c3e-9a51-0c1f7d2e8b9a",
"resourceVersion":"48213$N","creationTimestamp":"2026-05-01T10:00:00Z","generateName":"web-7d9f8c6b5-",
"labels":{"app":"web","pod-template-hash":"7d9f8c6b5","tier":"fe"},
"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9f8c6b5","uid":"0b3e7a2c-1111-4a4b-8c8d-9e9f0a1b2c3d","controller":true,"blockOwnerDeletion":true}]},
"spec":{"containers":[{"name":"web","image":"registry.example/web:1.25.3","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],
"env":[{"name":"MODE","value":"production"},{"name":"POD_IP","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"status.podIP"}}}],
"resources":{"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"250m","memory":"256Mi"}},
"volumeMounts":[{"name":"config","mountPath":"/etc/web"},{"name":"kube-api-access-x7k2p","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],
"livenessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},
"readinessProbe":{"httpGet":{"path":"/ready","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":5,"successThreshold":1,"failureThreshold":3},
"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},
{"name":"proxy","image":"registry.example/envoy:1.30.1","resources":{"requests":{"cpu":"50m","memory":"64Mi"}},
"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],
"volumes":[{"name":"config","configMap":{"name":"web-config","defaultMode":420}},{"name":"kube-api-access-x7k2p","projected":{"sources":[
{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],
"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default",
"nodeName":"node-$NODE","securityContext":{},"schedulerName":"default-scheduler","tolerations":[
{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},
{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],
"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},
"status":{"phase":"Running","conditions":[{"type":"PodReadyToStartContainers","status":"True","lastTransitionTime":"2026-05-01T10:00:03Z"},
{"type":"Initialized","status":"True","lastTransitionTime":"2026-05-01T10:00:00Z"},{"type":"Ready","status":"True","lastTransitionTime":"2026-05-01T10:00:09Z"},
{"type":"ContainersReady","status":"True","lastTransitionTime":"2026-05-01T10:00:09Z"},{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-05-01T10:00:00Z"}],
"hostIP":"10.1.0.$NODE","hostIPs":[{"ip":"10.1.0.$NODE"}],"podIP":"10.244.$NODE.$N","podIPs":[{"ip":"10.244.$NODE.$N"}],"startTime":"2026-05-01T10:00:00Z",
"containerStatuses":[{"name":"proxy","state":{"running":{"startedAt":"2026-05-01T10:00:04Z"}},"lastState":{},"ready":true,"restartCount":0,
"image":"registry.example/envoy:1.30.1","imageID":"registry.example/envoy@sha256:4b1d","containerID":"containerd://9c1e","started":true},
{"name":"web","state":{"running":{"startedAt":"2026-05-01T11:20:00Z"}},"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled",
"startedAt":"2026-05-01T10:00:03Z","finishedAt":"2026-05-01T11:19:58Z","containerID":"containerd://77aa"}},"ready":true,"restartCount":1,
"image":"registry.example/web:1.25.3","imageID":"registry.example/web@sha256:8f2c","containerID":"containerd://5d3f","started":true}],"qosClass":"Burstable"}}`

// newBenchPods returns n Pods of benchPod's shape, of graphqltest's Pod
// type.
func newBenchPods(b testing.TB, n int) []*object.Object { return newBenchPodsOf(b, podType, n) }

// newBenchPodsOf returns n Pods of benchPod's shape, of type t.
func newBenchPodsOf(b testing.TB, t *object.Type, n int) []*object.Object {
	out := make([]*object.Object, n)
	for i := range out {
		var u unstructured.Unstructured
		raw := strings.NewReplacer("\n", "", "$NAME", fmt.Sprintf("web-7d9f8c6b5-%05d", i), "$N4", fmt.Sprintf("%04d", i),
			"$NODE", strconv.Itoa(i%8), "$N", strconv.Itoa(i)).Replace(benchPod)
		if err := u.UnmarshalJSON([]byte(raw)); err != nil {
			b.Fatal(err)
		}
		o, err := object.NewObject("c1", t, &u)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = o
	}
	return out
}

// benchPodIndex returns an index of n Pods of benchPod's shape, stored as
// the informers store them: compressed, the values of the indexed paths
// kept beside the body.
func benchPodIndex(b testing.TB, n int) *index.Index {
	ix := index.New(index.Options{})
	t := *podType
	t.Codec = compact.NewCodec("pods", 0)
	t.Projected = fieldpath.NewSet(ix.IndexedPaths("pods"))
	// Train the codec, then keep the page.
	newBenchPodsOf(b, &t, 40)
	for _, o := range newBenchPodsOf(b, &t, n) {
		if !o.Compressed() {
			b.Fatal("the Pods are not compressed")
		}
		ix.Upsert(o)
	}
	return ix
}

// BenchmarkColumns queries a page of 50 Pods with and without their
// columns or three fields: the difference is what computing them costs.
// The Pods are stored as the informers store them: compressed, with the
// values of the indexed paths kept beside the body (two of the three
// fields). The sides alternate over three rounds, the first side rotating.
func BenchmarkColumns(b *testing.B) {
	const page = 50
	s := newServer(b, benchPodIndex(b, page), newFixture(b).tracker, Options{})
	queries := map[string]string{
		"none":    `{ resources(filter: {kinds: ["Pod"]}, first: 50) { edges { node { cluster namespace name } } } }`,
		"columns": `{ resources(filter: {kinds: ["Pod"]}, first: 50) { edges { node { cluster namespace name columns { name value } } } } }`,
		"indexed-fields=3": `{ resources(filter: {kinds: ["Pod"]}, first: 50) { edges { node { cluster namespace name
			phase: field(path: "status.phase") node: field(path: "spec.nodeName") images: field(path: "spec.containers[].image") } } } }`,
		"other-fields=3": `{ resources(filter: {kinds: ["Pod"]}, first: 50) { edges { node { cluster namespace name
			ip: field(path: "status.podIP") sa: field(path: "spec.serviceAccountName") restarts: field(path: "status.containerStatuses[].restartCount") } } } }`,
	}
	sides := []string{"none", "columns", "indexed-fields=3", "other-fields=3"}
	for round := range 3 {
		for k := range sides {
			side := sides[(round+k)%len(sides)]
			b.Run(fmt.Sprintf("pods=%d/%s/round=%d", page, side, round), func(b *testing.B) {
				var objects int
				for b.Loop() {
					if res := s.Execute(b.Context(), Request{Query: queries[side]}); len(res.Errors) > 0 {
						b.Fatal(res.Errors)
					}
					objects += page
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(objects), "ns/pod")
			})
		}
	}
}
