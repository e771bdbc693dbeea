package columns

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// now is the time the tests print at; ago gives times before it.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }

func typeOf(group, kind string) *object.Type {
	return &object.Type{GVR: schema.GroupVersionResource{Group: group, Version: "v1", Resource: strings.ToLower(kind) + "s"}, Kind: kind}
}

// testObject is an object of type t named "x" whose JSON is raw, with
// {{ago:5m}}-style times replaced.
func testObject(t *object.Type, raw string) *object.Object {
	for _, d := range []string{"30s", "5m", "10m", "2h", "3h", "26h"} {
		dur, _ := time.ParseDuration(d)
		raw = strings.ReplaceAll(raw, "{{ago:"+d+"}}", ago(dur))
	}
	o := &object.Object{Type: t, Name: "x"}
	o.SetRaw([]byte(raw))
	return o
}

// cols is "Name=Value|Name=Value…" as columns, Name=x first.
func cols(s string) []Column {
	out := []Column{{"Name", "x"}}
	if s == "" {
		return out
	}
	for _, c := range strings.Split(s, "|") {
		name, value, _ := strings.Cut(c, "=")
		out = append(out, Column{name, value})
	}
	return out
}

type printCase struct {
	name string
	raw  string
	want string
}

func runPrintCases(t *testing.T, typ *object.Type, tests []printCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := testTypes.For(testObject(typ, tc.raw), now)
			if diff := cmp.Diff(cols(tc.want), got); diff != "" {
				t.Errorf("For (-want +got):\n%s", diff)
			}
		})
	}
}

const podWide = "|IP=<none>|Node=<none>|Nominated Node=<none>|Readiness Gates=<none>"

func TestPod(t *testing.T) {
	runPrintCases(t, typeOf("", "Pod"), []printCase{
		{name: "no status", raw: `{"spec":{"containers":[{"name":"a"}]}}`,
			want: "Ready=0/1|Status=|Restarts=0" + podWide},
		{name: "pending", raw: `{"spec":{"containers":[{"name":"a"},{"name":"b"}]},"status":{"phase":"Pending"}}`,
			want: "Ready=0/2|Status=Pending|Restarts=0" + podWide},
		{name: "running with restarts, gates, IP and node", raw: `{"spec":{"nodeName":"n1","containers":[{"name":"a"},{"name":"b"}],
			"readinessGates":[{"conditionType":"g1"},{"conditionType":"g2"}]},
			"status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}],
			"conditions":[{"type":"g2","status":"True"},{"type":"g1","status":"False"}],
			"containerStatuses":[
				{"name":"a","ready":true,"restartCount":2,"state":{"running":{}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"{{ago:2h}}"}}},
				{"name":"b","ready":false,"restartCount":1,"state":{"running":{}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"{{ago:5m}}"}}}]}}`,
			want: "Ready=1/2|Status=Running|Restarts=3 (5m ago)|IP=10.0.0.1|Node=n1|Nominated Node=<none>|Readiness Gates=1/2"},
		{name: "restarts without a termination time", raw: `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Running",
			"containerStatuses":[{"name":"a","ready":true,"restartCount":4,"state":{"running":{}}}]}}`,
			want: "Ready=1/1|Status=Running|Restarts=4" + podWide},
		{name: "waiting reason", raw: `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Running",
			"containerStatuses":[{"name":"a","restartCount":7,"state":{"waiting":{"reason":"CrashLoopBackOff"}},
			"lastState":{"terminated":{"exitCode":1,"reason":"Error","finishedAt":"{{ago:30s}}"}}}]}}`,
			want: "Ready=0/1|Status=CrashLoopBackOff|Restarts=7 (30s ago)" + podWide},
		{name: "the first container's state wins", raw: `{"spec":{"containers":[{"name":"a"},{"name":"b"}]},"status":{"phase":"Running",
			"containerStatuses":[{"name":"a","state":{"waiting":{"reason":"ImagePullBackOff"}}},{"name":"b","state":{"terminated":{"exitCode":2}}}]}}`,
			want: "Ready=0/2|Status=ImagePullBackOff|Restarts=0" + podWide},
		{name: "terminated with a signal and with an exit code", raw: `{"spec":{"containers":[{"name":"a"},{"name":"b"}]},"status":{"phase":"Failed",
			"containerStatuses":[{"name":"a","state":{"terminated":{"exitCode":137,"signal":9}}},{"name":"b","state":{"terminated":{"exitCode":3}}}]}}`,
			want: "Ready=0/2|Status=Signal:9|Restarts=0" + podWide},
		{name: "exit code", raw: `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Failed",
			"containerStatuses":[{"name":"a","state":{"terminated":{"exitCode":3}}}]}}`,
			want: "Ready=0/1|Status=ExitCode:3|Restarts=0" + podWide},
		{name: "completed while another runs, ready", raw: `{"spec":{"containers":[{"name":"a"},{"name":"b"}]},"status":{"phase":"Running",
			"conditions":[{"type":"Ready","status":"True"}],
			"containerStatuses":[{"name":"a","state":{"terminated":{"exitCode":0,"reason":"Completed"}}},{"name":"b","ready":true,"state":{"running":{}}}]}}`,
			want: "Ready=1/2|Status=Running|Restarts=0" + podWide},
		{name: "completed while another runs, not ready", raw: `{"spec":{"containers":[{"name":"a"},{"name":"b"}]},"status":{"phase":"Running",
			"containerStatuses":[{"name":"a","state":{"terminated":{"exitCode":0,"reason":"Completed"}}},{"name":"b","ready":true,"state":{"running":{}}}]}}`,
			want: "Ready=1/2|Status=NotReady|Restarts=0" + podWide},
		{name: "status reason", raw: `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Failed","reason":"Evicted"}}`,
			want: "Ready=0/1|Status=Evicted|Restarts=0" + podWide},
		{name: "scheduling gated", raw: `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Pending",
			"conditions":[{"type":"PodScheduled","status":"False","reason":"SchedulingGated"}]}}`,
			want: "Ready=0/1|Status=SchedulingGated|Restarts=0" + podWide},
		{name: "nominated", raw: `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Pending","nominatedNodeName":"n2"}}`,
			want: "Ready=0/1|Status=Pending|Restarts=0|IP=<none>|Node=<none>|Nominated Node=n2|Readiness Gates=<none>"},
		{name: "init containers: the second waits", raw: `{"spec":{"initContainers":[{"name":"i1"},{"name":"i2"}],"containers":[{"name":"a"}]},
			"status":{"phase":"Pending","initContainerStatuses":[
				{"name":"i1","state":{"terminated":{"exitCode":0,"reason":"Completed"}}},
				{"name":"i2","state":{"waiting":{"reason":"PodInitializing"}}}],
			"containerStatuses":[{"name":"a","state":{"waiting":{"reason":"PodInitializing"}}}]}}`,
			want: "Ready=0/1|Status=Init:1/2|Restarts=0" + podWide},
		{name: "init container failed, restarts counted", raw: `{"spec":{"initContainers":[{"name":"i1"}],"containers":[{"name":"a"}]},
			"status":{"phase":"Pending","initContainerStatuses":[
				{"name":"i1","restartCount":3,"state":{"terminated":{"exitCode":1,"reason":"Error"}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"{{ago:10m}}"}}}],
			"containerStatuses":[{"name":"a","restartCount":9,"state":{"waiting":{"reason":"PodInitializing"}}}]}}`,
			want: "Ready=0/1|Status=Init:Error|Restarts=3 (10m ago)" + podWide},
		{name: "init container killed", raw: `{"spec":{"initContainers":[{"name":"i1"}],"containers":[{"name":"a"}]},
			"status":{"phase":"Pending","initContainerStatuses":[{"name":"i1","state":{"terminated":{"exitCode":137,"signal":9}}}]}}`,
			want: "Ready=0/1|Status=Init:Signal:9|Restarts=0" + podWide},
		{name: "init container exit code", raw: `{"spec":{"initContainers":[{"name":"i1"}],"containers":[{"name":"a"}]},
			"status":{"phase":"Pending","initContainerStatuses":[{"name":"i1","state":{"terminated":{"exitCode":4}}}]}}`,
			want: "Ready=0/1|Status=Init:ExitCode:4|Restarts=0" + podWide},
		{name: "init container waiting with a reason", raw: `{"spec":{"initContainers":[{"name":"i1"}],"containers":[{"name":"a"}]},
			"status":{"phase":"Pending","initContainerStatuses":[{"name":"i1","state":{"waiting":{"reason":"ErrImagePull"}}}]}}`,
			want: "Ready=0/1|Status=Init:ErrImagePull|Restarts=0" + podWide},
		{name: "started sidecar", raw: `{"spec":{"initContainers":[{"name":"s","restartPolicy":"Always"}],"containers":[{"name":"a"}]},
			"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True"}],
			"initContainerStatuses":[{"name":"s","ready":true,"started":true,"restartCount":1,"state":{"running":{}},
				"lastState":{"terminated":{"exitCode":1,"finishedAt":"{{ago:3h}}"}}}],
			"containerStatuses":[{"name":"a","ready":true,"restartCount":1,"state":{"running":{}}}]}}`,
			want: "Ready=2/2|Status=Running|Restarts=2 (3h ago)" + podWide},
		{name: "sidecar not started", raw: `{"spec":{"initContainers":[{"name":"s","restartPolicy":"Always"}],"containers":[{"name":"a"}]},
			"status":{"phase":"Pending","initContainerStatuses":[{"name":"s","started":false,"state":{"waiting":{}}}]}}`,
			want: "Ready=0/2|Status=Init:0/1|Restarts=0" + podWide},
		{name: "deleting", raw: `{"metadata":{"deletionTimestamp":"{{ago:30s}}"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Running","containerStatuses":[{"name":"a","ready":true,"state":{"running":{}}}]}}`,
			want: "Ready=1/1|Status=Terminating|Restarts=0" + podWide},
		{name: "deleting after it ended", raw: `{"metadata":{"deletionTimestamp":"{{ago:30s}}"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Succeeded","containerStatuses":[{"name":"a","state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}`,
			want: "Ready=0/1|Status=Completed|Restarts=0" + podWide},
		{name: "deleting on a lost node", raw: `{"metadata":{"deletionTimestamp":"{{ago:30s}}"},"spec":{"containers":[{"name":"a"}]},
			"status":{"phase":"Running","reason":"NodeLost"}}`,
			want: "Ready=0/1|Status=Unknown|Restarts=0" + podWide},
		{name: "a status of another shape: the name alone", raw: `{"status":"Running"}`, want: ""},
	})
}

func TestWorkloads(t *testing.T) {
	tmpl := `"template":{"spec":{"containers":[{"name":"web","image":"nginx:1"},{"name":"log","image":"fluent:2"}]}}`
	const ci = "|Containers=web,log|Images=nginx:1,fluent:2"
	sel := `"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["fe","be"]}]}`
	const selText = "|Selector=app=web,tier in (be,fe)"
	t.Run("Deployment", func(t *testing.T) {
		runPrintCases(t, typeOf("apps", "Deployment"), []printCase{
			{name: "with status", raw: `{"spec":{"replicas":3,` + sel + `,` + tmpl + `},"status":{"readyReplicas":2,"updatedReplicas":3,"availableReplicas":1}}`,
				want: "Ready=2/3|Up-to-date=3|Available=1" + ci + selText},
			{name: "no replicas, no status", raw: `{"spec":{` + tmpl + `}}`,
				want: "Ready=0/1|Up-to-date=0|Available=0" + ci + "|Selector=<none>"},
		})
	})
	t.Run("ReplicaSet", func(t *testing.T) {
		runPrintCases(t, typeOf("apps", "ReplicaSet"), []printCase{
			{name: "scaled to zero", raw: `{"spec":{"replicas":0,` + sel + `,` + tmpl + `},"status":{"replicas":1}}`,
				want: "Desired=0|Current=1|Ready=0" + ci + selText},
		})
	})
	t.Run("StatefulSet", func(t *testing.T) {
		runPrintCases(t, typeOf("apps", "StatefulSet"), []printCase{
			{name: "with status", raw: `{"spec":{"replicas":5,` + tmpl + `},"status":{"readyReplicas":4}}`, want: "Ready=4/5" + ci},
		})
	})
	t.Run("DaemonSet", func(t *testing.T) {
		runPrintCases(t, typeOf("apps", "DaemonSet"), []printCase{
			{name: "node selector", raw: `{"spec":{` + sel + `,"template":{"spec":{"nodeSelector":{"os":"linux","disk":"ssd"},
				"containers":[{"name":"web","image":"nginx:1"},{"name":"log","image":"fluent:2"}]}}},
				"status":{"desiredNumberScheduled":5,"currentNumberScheduled":4,"numberReady":3,"updatedNumberScheduled":2,"numberAvailable":1}}`,
				want: "Desired=5|Current=4|Ready=3|Up-to-date=2|Available=1|Node Selector=disk=ssd,os=linux" + ci + selText},
			{name: "no status", raw: `{"spec":{` + tmpl + `}}`,
				want: "Desired=0|Current=0|Ready=0|Up-to-date=0|Available=0|Node Selector=<none>" + ci + "|Selector=<none>"},
		})
	})
	t.Run("Job", func(t *testing.T) {
		cond := func(typ string) string { return `"conditions":[{"type":"` + typ + `","status":"True"}]` }
		runPrintCases(t, typeOf("batch", "Job"), []printCase{
			{name: "running", raw: `{"spec":{"completions":3,` + tmpl + `},"status":{"succeeded":1,"startTime":"{{ago:10m}}"}}`,
				want: "Status=Running|Completions=1/3|Duration=10m" + ci + "|Selector=<none>"},
			{name: "complete", raw: `{"spec":{"completions":1,` + sel + `,` + tmpl + `},"status":{"succeeded":1,"startTime":"{{ago:3h}}",
				"completionTime":"{{ago:2h}}",` + cond("Complete") + `}}`,
				want: "Status=Complete|Completions=1/1|Duration=60m" + ci + selText},
			{name: "failed", raw: `{"spec":{"completions":1,` + tmpl + `},"status":{` + cond("Failed") + `}}`,
				want: "Status=Failed|Completions=0/1|Duration=" + ci + "|Selector=<none>"},
			{name: "failure target", raw: `{"spec":{"completions":1,` + tmpl + `},"status":{` + cond("FailureTarget") + `}}`,
				want: "Status=FailureTarget|Completions=0/1|Duration=" + ci + "|Selector=<none>"},
			{name: "success criteria met", raw: `{"spec":{"completions":1,` + tmpl + `},"status":{` + cond("SuccessCriteriaMet") + `}}`,
				want: "Status=SuccessCriteriaMet|Completions=0/1|Duration=" + ci + "|Selector=<none>"},
			{name: "terminating", raw: `{"metadata":{"deletionTimestamp":"{{ago:5m}}"},"spec":{"completions":1,` + tmpl + `},"status":{` + cond("Suspended") + `}}`,
				want: "Status=Terminating|Completions=0/1|Duration=" + ci + "|Selector=<none>"},
			{name: "suspended", raw: `{"spec":{"completions":1,` + tmpl + `},"status":{"conditions":[{"type":"Complete","status":"False"},
				{"type":"Suspended","status":"True"}]}}`,
				want: "Status=Suspended|Completions=0/1|Duration=" + ci + "|Selector=<none>"},
			{name: "parallel without completions", raw: `{"spec":{"parallelism":4,` + tmpl + `},"status":{"succeeded":2}}`,
				want: "Status=Running|Completions=2/1 of 4|Duration=" + ci + "|Selector=<none>"},
			{name: "one at a time without completions", raw: `{"spec":{"parallelism":1,` + tmpl + `}}`,
				want: "Status=Running|Completions=0/1|Duration=" + ci + "|Selector=<none>"},
		})
	})
	t.Run("CronJob", func(t *testing.T) {
		runPrintCases(t, typeOf("batch", "CronJob"), []printCase{
			{name: "scheduled", raw: `{"spec":{"schedule":"0 * * * *","timeZone":"Etc/UTC","suspend":false,"jobTemplate":{"spec":{` + sel + `,` + tmpl + `}}},
				"status":{"active":[{"name":"a"},{"name":"b"}],"lastScheduleTime":"{{ago:26h}}"}}`,
				want: "Schedule=0 * * * *|Timezone=Etc/UTC|Suspend=False|Active=2|Last Schedule=26h" + ci + selText},
			{name: "never scheduled, suspended", raw: `{"spec":{"schedule":"@daily","suspend":true,"jobTemplate":{"spec":{` + tmpl + `}}}}`,
				want: "Schedule=@daily|Timezone=<none>|Suspend=True|Active=0|Last Schedule=<none>" + ci + "|Selector=<none>"},
			{name: "suspend unset", raw: `{"spec":{"schedule":"@daily","jobTemplate":{"spec":{` + tmpl + `}}}}`,
				want: "Schedule=@daily|Timezone=<none>|Suspend=<unset>|Active=0|Last Schedule=<none>" + ci + "|Selector=<none>"},
		})
	})
}

func TestNetwork(t *testing.T) {
	t.Run("Service", func(t *testing.T) {
		runPrintCases(t, typeOf("", "Service"), []printCase{
			{name: "cluster IP with external IPs", raw: `{"spec":{"type":"ClusterIP","clusterIP":"10.0.0.1","externalIPs":["1.2.3.4","5.6.7.8"],
				"selector":{"app":"web"},"ports":[{"port":80,"protocol":"TCP"},{"port":53,"protocol":"UDP"}]}}`,
				want: "Type=ClusterIP|Cluster-IP=10.0.0.1|External-IP=1.2.3.4,5.6.7.8|Port(s)=80/TCP,53/UDP|Selector=app=web"},
			{name: "node port", raw: `{"spec":{"type":"NodePort","clusterIP":"10.0.0.2","ports":[{"port":80,"nodePort":30080,"protocol":"TCP"}]}}`,
				want: "Type=NodePort|Cluster-IP=10.0.0.2|External-IP=<none>|Port(s)=80:30080/TCP|Selector=<none>"},
			{name: "load balancer", raw: `{"spec":{"type":"LoadBalancer","clusterIP":"10.0.0.3","externalIPs":["9.9.9.9"],
				"ports":[{"port":443,"nodePort":30443,"protocol":"TCP"}]},
				"status":{"loadBalancer":{"ingress":[{"ip":"1.1.1.1","hostname":"ignored"},{"hostname":"lb.example"},{}]}}}`,
				want: "Type=LoadBalancer|Cluster-IP=10.0.0.3|External-IP=1.1.1.1,lb.example,9.9.9.9|Port(s)=443:30443/TCP|Selector=<none>"},
			{name: "pending load balancer", raw: `{"spec":{"type":"LoadBalancer","clusterIP":"10.0.0.4"}}`,
				want: "Type=LoadBalancer|Cluster-IP=10.0.0.4|External-IP=<pending>|Port(s)=<none>|Selector=<none>"},
			{name: "external name", raw: `{"spec":{"type":"ExternalName","externalName":"db.example"}}`,
				want: "Type=ExternalName|Cluster-IP=<none>|External-IP=db.example|Port(s)=<none>|Selector=<none>"},
			{name: "headless", raw: `{"spec":{"type":"ClusterIP","clusterIP":"None","ports":[{"port":5432,"protocol":"TCP"}]}}`,
				want: "Type=ClusterIP|Cluster-IP=None|External-IP=<none>|Port(s)=5432/TCP|Selector=<none>"},
		})
	})
	t.Run("Ingress", func(t *testing.T) {
		runPrintCases(t, typeOf("networking.k8s.io", "Ingress"), []printCase{
			{name: "many hosts with TLS", raw: `{"spec":{"ingressClassName":"nginx","tls":[{}],
				"rules":[{"host":"a"},{},{"host":"b"},{"host":"c"},{"host":"d"},{"host":"e"}]},
				"status":{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"},{"hostname":"h"}]}}}`,
				want: "Class=nginx|Hosts=a,b,c + 3 more...|Address=1.1.1.1,h|Ports=80, 443"},
			{name: "three hosts", raw: `{"spec":{"rules":[{"host":"a"},{"host":"b"},{"host":"c"}]}}`,
				want: "Class=<none>|Hosts=a,b,c|Address=|Ports=80"},
			{name: "no host", raw: `{"spec":{"defaultBackend":{}}}`, want: "Class=<none>|Hosts=*|Address=|Ports=80"},
		})
	})
}

func TestCoreKinds(t *testing.T) {
	t.Run("ConfigMap", func(t *testing.T) {
		runPrintCases(t, typeOf("", "ConfigMap"), []printCase{
			{name: "data and binary data", raw: `{"data":{"a":"1","b":""},"binaryData":{"c":"AA=="}}`, want: "Data=3"},
			{name: "empty", raw: `{}`, want: "Data=0"},
		})
	})
	t.Run("Secret", func(t *testing.T) {
		runPrintCases(t, typeOf("", "Secret"), []printCase{
			{name: "with data", raw: `{"type":"kubernetes.io/tls","data":{"tls.crt":"","tls.key":""}}`, want: "Type=kubernetes.io/tls|Data=2"},
		})
		dropped := typeOf("", "Secret")
		testTypes.Set(dropped, DataNotCached)
		runPrintCases(t, dropped, []printCase{
			{name: "data not cached", raw: `{"type":"Opaque"}`, want: "Type=Opaque|Data=<unknown>"},
		})
	})
	t.Run("Namespace", func(t *testing.T) {
		runPrintCases(t, typeOf("", "Namespace"), []printCase{
			{name: "terminating", raw: `{"status":{"phase":"Terminating"}}`, want: "Status=Terminating"},
		})
	})
	t.Run("Node", func(t *testing.T) {
		runPrintCases(t, typeOf("", "Node"), []printCase{
			{name: "ready with roles", raw: `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":"","node-role.kubernetes.io/":"x",
				"node-role.kubernetes.io/infra":"true","kubernetes.io/role":"infra","other":"y"}},
				"status":{"conditions":[{"type":"DiskPressure","status":"True"},{"type":"Ready","status":"True"}],
				"addresses":[{"type":"Hostname","address":"n"},{"type":"ExternalIP","address":"2.2.2.2"},{"type":"InternalIP","address":"10.0.0.1"},
				{"type":"InternalIP","address":"10.0.0.2"}],
				"nodeInfo":{"kubeletVersion":"v1.36.3","osImage":"Debian","kernelVersion":"6.1","containerRuntimeVersion":"containerd://2","architecture":"arm64"}}}`,
				want: "Status=Ready|Roles=control-plane,infra|Version=v1.36.3|Internal-IP=10.0.0.1|External-IP=2.2.2.2|OS-Image=Debian|Kernel-Version=6.1 (arm64)|Container-Runtime=containerd://2"},
			{name: "cordoned, not ready", raw: `{"spec":{"unschedulable":true},"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`,
				want: "Status=NotReady,SchedulingDisabled|Roles=<none>|Version=|Internal-IP=<none>|External-IP=<none>|OS-Image=<unknown>|Kernel-Version=<unknown>|Container-Runtime=<unknown>"},
			{name: "no conditions", raw: `{}`,
				want: "Status=Unknown|Roles=<none>|Version=|Internal-IP=<none>|External-IP=<none>|OS-Image=<unknown>|Kernel-Version=<unknown>|Container-Runtime=<unknown>"},
		})
	})
	t.Run("PersistentVolumeClaim", func(t *testing.T) {
		runPrintCases(t, typeOf("", "PersistentVolumeClaim"), []printCase{
			{name: "bound", raw: `{"spec":{"volumeName":"pv1","storageClassName":"fast","volumeMode":"Filesystem","volumeAttributesClassName":"gold"},
				"status":{"phase":"Bound","accessModes":["ReadWriteOncePod","ReadWriteMany","ReadWriteOnce","ReadWriteOnce"],"capacity":{"storage":"1024Mi"}}}`,
				want: "Status=Bound|Volume=pv1|Capacity=1Gi|Access Modes=RWO,RWX,RWOP|StorageClass=fast|VolumeAttributesClass=gold|VolumeMode=Filesystem"},
			{name: "pending, class from the annotation", raw: `{"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-class":"old"}},
				"spec":{"storageClassName":"fast"},"status":{"phase":"Pending","capacity":{"storage":"1Gi"}}}`,
				want: "Status=Pending|Volume=|Capacity=|Access Modes=|StorageClass=old|VolumeAttributesClass=<unset>|VolumeMode=<unset>"},
			{name: "deleting", raw: `{"metadata":{"deletionTimestamp":"{{ago:5m}}"},"status":{"phase":"Bound"}}`,
				want: "Status=Terminating|Volume=|Capacity=|Access Modes=|StorageClass=|VolumeAttributesClass=<unset>|VolumeMode=<unset>"},
		})
	})
	t.Run("PersistentVolume", func(t *testing.T) {
		runPrintCases(t, typeOf("", "PersistentVolume"), []printCase{
			{name: "bound", raw: `{"spec":{"capacity":{"storage":"500Gi"},"accessModes":["ReadOnlyMany"],"persistentVolumeReclaimPolicy":"Delete",
				"claimRef":{"namespace":"ns","name":"data"},"storageClassName":"fast","volumeMode":"Block"},"status":{"phase":"Bound"}}`,
				want: "Capacity=500Gi|Access Modes=ROX|Reclaim Policy=Delete|Status=Bound|Claim=ns/data|StorageClass=fast|VolumeAttributesClass=<unset>|Reason=|VolumeMode=Block"},
			{name: "failed, deleting", raw: `{"metadata":{"deletionTimestamp":"{{ago:5m}}"},"spec":{},"status":{"phase":"Failed","reason":"Recycler failed"}}`,
				want: "Capacity=|Access Modes=|Reclaim Policy=|Status=Terminating|Claim=|StorageClass=|VolumeAttributesClass=<unset>|Reason=Recycler failed|VolumeMode=<unset>"},
		})
	})
}

func TestEvent(t *testing.T) {
	typ := typeOf("", "Event")
	tests := []printCase{
		{name: "with timestamps", raw: `{"involvedObject":{"kind":"Pod","name":"web","fieldPath":"spec.containers{a}"},"type":"Warning","reason":"BackOff",
			"message":" Back-off \n","source":{"component":"kubelet","host":"n1"},"firstTimestamp":"{{ago:3h}}","lastTimestamp":"{{ago:5m}}","count":12}`,
			want: "Last Seen=5m|Type=Warning|Reason=BackOff|Object=pod/web|Subobject=spec.containers{a}|Source=kubelet, n1|Message=Back-off|First Seen=3h|Count=12"},
		{name: "with a series", raw: `{"involvedObject":{"kind":"Deployment","name":"web"},"type":"Normal","reason":"Scaled","message":"up",
			"reportingComponent":"ctrl","reportingInstance":"ctrl-1","eventTime":"2026-05-01T09:00:00.000000Z",
			"series":{"count":4,"lastObservedTime":"2026-05-01T11:59:30.000000Z"}}`,
			want: "Last Seen=30s|Type=Normal|Reason=Scaled|Object=deployment/web|Subobject=|Source=ctrl, ctrl-1|Message=up|First Seen=3h|Count=4"},
		{name: "first timestamp only, no name", raw: `{"involvedObject":{"kind":"Namespace"},"firstTimestamp":"{{ago:10m}}","source":{"component":"me"}}`,
			want: "Last Seen=10m|Type=|Reason=|Object=namespace|Subobject=|Source=me|Message=|First Seen=10m|Count=1"},
		{name: "no times", raw: `{"involvedObject":{"kind":"Pod","name":"p"},"count":2}`,
			want: "Last Seen=<unknown>|Type=|Reason=|Object=pod/p|Subobject=|Source=|Message=|First Seen=<unknown>|Count=2"},
	}
	// The same Events as events.k8s.io serves them.
	eventsAPI := typeOf("events.k8s.io", "Event")
	tests = append(tests, []printCase{
		{name: "events.k8s.io with timestamps", raw: `{"regarding":{"kind":"Pod","name":"web","fieldPath":"spec.containers{a}"},"type":"Warning",
			"reason":"BackOff","note":" Back-off \n","deprecatedSource":{"component":"kubelet","host":"n1"},"deprecatedFirstTimestamp":"{{ago:3h}}",
			"deprecatedLastTimestamp":"{{ago:5m}}","deprecatedCount":12}`,
			want: "Last Seen=5m|Type=Warning|Reason=BackOff|Object=pod/web|Subobject=spec.containers{a}|Source=kubelet, n1|Message=Back-off|First Seen=3h|Count=12"},
		{name: "events.k8s.io with a series", raw: `{"regarding":{"kind":"Deployment","name":"web"},"type":"Normal","reason":"Scaled","note":"up",
			"reportingController":"ctrl","reportingInstance":"ctrl-1","eventTime":"2026-05-01T09:00:00.000000Z",
			"series":{"count":4,"lastObservedTime":"2026-05-01T11:59:30.000000Z"}}`,
			want: "Last Seen=30s|Type=Normal|Reason=Scaled|Object=deployment/web|Subobject=|Source=ctrl, ctrl-1|Message=up|First Seen=3h|Count=4"},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ty := typ
			if strings.HasPrefix(tc.name, "events.k8s.io") {
				ty = eventsAPI
			}
			// The Event's Name is its last column.
			want := append(cols(tc.want)[1:], Column{"Name", "x"})
			if diff := cmp.Diff(want, testTypes.For(testObject(ty, tc.raw), now)); diff != "" {
				t.Errorf("For (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOtherKinds(t *testing.T) {
	for _, typ := range []*object.Type{typeOf("", "ServiceAccount"), typeOf("rbac.authorization.k8s.io", "Role"), typeOf("example.com", "Pod")} {
		if diff := cmp.Diff(cols(""), testTypes.For(testObject(typ, `{"spec":{}}`), now)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", typ.KindName(), diff)
		}
	}
}

func TestCustom(t *testing.T) {
	var defs []PrinterColumn
	if err := json.Unmarshal([]byte(`[
		{"name":"Color","type":"string","jsonPath":".spec.color"},
		{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},
		{"name":"Ratio","type":"number","jsonPath":".spec.ratio"},
		{"name":"On","type":"boolean","jsonPath":".spec.on"},
		{"name":"Started","type":"date","jsonPath":".status.started"},
		{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"},
		{"name":"First","type":"string","jsonPath":".spec.items[0].name","priority":1},
		{"name":"Map","type":"string","jsonPath":".spec.map","priority":1}]`), &defs); err != nil {
		t.Fatal(err)
	}
	typ := typeOf("example.com", "Widget")
	c := &Custom{}
	testTypes.Set(typ, c)
	t.Run("before the columns are set", func(t *testing.T) {
		if diff := cmp.Diff(cols(""), testTypes.For(testObject(typ, `{}`), now)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	if err := c.Set(defs); err != nil {
		t.Fatal(err)
	}
	if got := len(c.Columns()); got != len(defs)-1 {
		t.Errorf("%d columns kept, want %d: the age left out", got, len(defs)-1)
	}
	runPrintCases(t, typ, []printCase{
		{name: "every type", raw: `{"metadata":{"creationTimestamp":"{{ago:5m}}"},"spec":{"color":"blue","replicas":3,"ratio":0.25,"on":true,
			"items":[{"name":"a"},{"name":"b"}],"map":{"k":"v"}},"status":{"started":"{{ago:26h}}"}}`,
			want: "Color=blue|Replicas=3|Ratio=0.25|On=true|Started=26h|First=a|Map={\"k\":\"v\"}"},
		{name: "missing", raw: `{"spec":{}}`,
			want: "Color=<none>|Replicas=<none>|Ratio=<none>|On=<none>|Started=<none>|First=<none>|Map=<none>"},
		{name: "other types", raw: `{"spec":{"color":5,"replicas":2.9,"ratio":7,"on":"yes","items":[{"name":1.5}],"map":null},"status":{"started":"soon"}}`,
			want: "Color=5|Replicas=2|Ratio=7|On=<none>|Started=<invalid>|First=1.5|Map=<none>"},
		{name: "wrong types", raw: `{"spec":{"replicas":"3","ratio":"x","on":1},"status":{"started":5}}`,
			want: "Color=<none>|Replicas=<none>|Ratio=<none>|On=<none>|Started=<none>|First=<none>|Map=<none>"},
		{name: "not JSON", raw: `{`, want: ""},
	})
	t.Run("set to none", func(t *testing.T) {
		if err := c.Set(nil); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(cols(""), testTypes.For(testObject(typ, `{"spec":{"color":"blue"}}`), now)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a path that does not parse", func(t *testing.T) {
		if err := c.Set([]PrinterColumn{{Name: "A", Type: "string", JSONPath: ".spec.color"}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Set([]PrinterColumn{{Name: "B", Type: "string", JSONPath: ".spec[?("}}); err == nil {
			t.Fatal("Set accepted a path that does not parse")
		}
		if diff := cmp.Diff(cols("A=blue"), testTypes.For(testObject(typ, `{"spec":{"color":"blue"}}`), now)); diff != "" {
			t.Errorf("the columns set before must stay (-want +got):\n%s", diff)
		}
	})
}

// TestCustomConcurrent prints custom resources from several goroutines
// while the columns change (run with -race).
func TestCustomConcurrent(t *testing.T) {
	typ := typeOf("example.com", "Widget")
	c := &Custom{}
	testTypes.Set(typ, c)
	defs := []PrinterColumn{{Name: "Color", Type: "string", JSONPath: ".spec.color"}}
	if err := c.Set(defs); err != nil {
		t.Fatal(err)
	}
	o := testObject(typ, `{"spec":{"color":"blue","size":2}}`)
	done := make(chan []Column, 4)
	for range 4 {
		go func() {
			var last []Column
			for range 200 {
				last = testTypes.For(o, now)
			}
			done <- last
		}()
	}
	for range 50 {
		if err := c.Set(defs); err != nil {
			t.Error(err)
		}
	}
	for range 4 {
		if diff := cmp.Diff(cols("Color=blue"), <-done); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}
