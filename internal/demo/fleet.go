package demo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// WidgetResource is the demo's custom resource type, by kubectl name; the
	// aggregator caches it in addition to informers.DefaultResources.
	WidgetResource = "widgets.demo.fleetcache.io"
	// widgetGroup is the API group of the Widget CRD.
	widgetGroup = "demo.fleetcache.io"
	// seedConcurrency bounds the requests one cluster's seeding has in flight:
	// enough to seed a few hundred objects in about a second, few enough that
	// three API servers on two cores keep up.
	seedConcurrency = 16
	// crdTimeout bounds the wait for the Widget type to be served.
	crdTimeout = 30 * time.Second
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: "widgets"}
)

// clusterPlan describes what one cluster runs. The three plans differ in
// size, namespaces, replicas and labels, so that facets by cluster,
// namespace or label have something to show.
type clusterPlan struct {
	name   string
	env    string // the "env" label of every workload
	region string // the nodes' zone prefix and the "region" label
	nodes  int
	// replicas is the Pod count of a Deployment; every other app gets one more.
	replicas   int
	namespaces []namespacePlan
}

// namespacePlan is one namespace: its apps (a Deployment each) and how many
// Widgets it holds.
type namespacePlan struct {
	name    string
	apps    []string
	widgets int
}

// The apps of each namespace; a cluster runs all or some of them.
var (
	teamA         = []string{"web", "api", "worker", "cache", "search", "notifications"}
	teamB         = []string{"frontend", "backend", "reports", "scheduler", "export"}
	payments      = []string{"api", "ledger", "fraud", "gateway", "notifier", "reconciler"}
	search        = []string{"indexer", "query", "crawler", "ranker"}
	observability = []string{"collector", "dashboards", "alerting"}
	checkout      = []string{"cart", "pricing", "orders", "inventory", "shipping"}
	sandbox       = []string{"playground", "load-test", "canary"}
)

// plans is the demo fleet: two production regions that run different
// namespaces, and a staging cluster with every app at fewer replicas.
var plans = []clusterPlan{
	{
		name: "prod-eu", env: "production", region: "eu-west-1", nodes: 4, replicas: 3,
		namespaces: []namespacePlan{
			{name: "team-a", apps: teamA, widgets: 5},
			{name: "team-b", apps: teamB, widgets: 4},
			{name: "payments", apps: payments, widgets: 6},
			{name: "search", apps: search, widgets: 3},
			{name: "observability", apps: observability, widgets: 2},
		},
	},
	{
		name: "prod-us", env: "production", region: "us-east-1", nodes: 3, replicas: 2,
		namespaces: []namespacePlan{
			{name: "team-a", apps: teamA, widgets: 4},
			{name: "team-b", apps: teamB[:3], widgets: 3},
			{name: "payments", apps: payments, widgets: 5},
			{name: "checkout", apps: checkout, widgets: 4},
		},
	},
	{
		name: "staging", env: "staging", region: "eu-west-1", nodes: 2, replicas: 1,
		namespaces: []namespacePlan{
			{name: "team-a", apps: teamA, widgets: 2},
			{name: "team-b", apps: teamB, widgets: 2},
			{name: "payments", apps: payments, widgets: 3},
			{name: "checkout", apps: checkout, widgets: 2},
			{name: "sandbox", apps: sandbox, widgets: 1},
		},
	},
}

// widgetNames name the seeded Widgets, in order.
var widgetNames = []string{"gizmo", "sprocket", "gadget", "flange", "doohickey", "widget-x"}

// widgetColors are the Widget CRD's allowed colours.
var widgetColors = []string{"red", "green", "blue", "yellow"}

// tiers gives an app its "tier" label; apps not listed are backends. Workers
// have no Service.
var tiers = map[string]string{
	"web": "frontend", "frontend": "frontend", "gateway": "frontend", "dashboards": "frontend", "playground": "frontend",
	"worker": "worker", "scheduler": "worker", "export": "worker", "notifier": "worker", "reconciler": "worker",
	"indexer": "worker", "crawler": "worker", "collector": "worker", "load-test": "worker",
}

// app is one seeded Deployment and what the demo made for it, as the churn
// needs it.
type app struct {
	namespace, name string
	rsName, hash    string
	rsUID           string
	tier            string
	nodes           []string // the cluster's node names, for placing Pods
	pods            []string // names of the current ReplicaSet's Pods
	maxPods         int      // the churn scales between 1 and maxPods
}

// member is one running demo cluster: its clients and what was seeded in it.
type member struct {
	plan     clusterPlan
	config   *rest.Config
	http     *http.Client
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	apps     []*app
	configs  []objectRef // ConfigMaps the churn relabels
	widgets  []objectRef // Widgets the churn created and has not deleted yet
	revision int         // the churn's counter for label values and names
	// created counts the objects seeded, for the summary Run prints.
	created atomic.Int64
}

// objectRef names a namespaced object.
type objectRef struct{ namespace, name string }

// newMember builds the clients of one cluster on one shared HTTP client,
// whose connections Run closes at the end.
func newMember(plan clusterPlan, cfg *rest.Config) (*member, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: http client: %w", plan.name, err)
	}
	client, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: client: %w", plan.name, err)
	}
	dc, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: dynamic client: %w", plan.name, err)
	}
	return &member{plan: plan, config: cfg, http: hc, client: client, dynamic: dc}, nil
}

// pool runs functions concurrently, at most n at once, and collects their
// errors. A function may start more functions on the same pool.
type pool struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func newPool(n int) *pool { return &pool{sem: make(chan struct{}, n)} }

// Go runs f once a slot is free. The slot is taken inside the new goroutine,
// so that a running function can call Go without deadlocking.
func (p *pool) Go(ctx context.Context, f func() error) {
	p.wg.Go(func() {
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			p.fail(ctx.Err())
			return
		}
		defer func() { <-p.sem }()
		if err := f(); err != nil {
			p.fail(err)
		}
	})
}

func (p *pool) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, err)
}

// Wait waits for every function and returns their errors joined.
func (p *pool) Wait() error {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}

// seed creates the cluster's fleet: first the Widget CRD, the namespaces and
// the nodes, then every app and Widget, concurrently.
func (m *member) seed(ctx context.Context) error {
	p := newPool(seedConcurrency)
	p.Go(ctx, func() error { return m.createWidgetCRD(ctx) })
	for i := range m.plan.nodes {
		p.Go(ctx, func() error { return m.createNode(ctx, i) })
	}
	for _, ns := range m.plan.namespaces {
		p.Go(ctx, func() error { return m.createNamespace(ctx, ns.name) })
	}
	if err := p.Wait(); err != nil {
		return fmt.Errorf("seed cluster %q: %w", m.plan.name, err)
	}
	nodes := make([]string, m.plan.nodes)
	for i := range nodes {
		nodes[i] = m.nodeName(i)
	}
	p = newPool(seedConcurrency)
	for _, ns := range m.plan.namespaces {
		for i, name := range ns.apps {
			a := &app{
				namespace: ns.name, name: name, tier: tierOf(name), nodes: nodes,
				maxPods: m.plan.replicas + i%2 + 2,
			}
			m.apps = append(m.apps, a)
			m.configs = append(m.configs, objectRef{ns.name, name + "-config"})
			p.Go(ctx, func() error { return m.createApp(ctx, a, m.plan.replicas+i%2, i%3 == 0) })
		}
		p.Go(ctx, func() error { return m.createReportJob(ctx, ns.name, nodes) })
		for i := range ns.widgets {
			p.Go(ctx, func() error { return m.createWidget(ctx, ns.name, widgetNames[i%len(widgetNames)], i) })
		}
	}
	if err := p.Wait(); err != nil {
		return fmt.Errorf("seed cluster %q: %w", m.plan.name, err)
	}
	return nil
}

func tierOf(app string) string {
	if t, ok := tiers[app]; ok {
		return t
	}
	return "backend"
}

func (m *member) nodeName(i int) string { return fmt.Sprintf("%s-node-%d", m.plan.name, i+1) }

// NodeVersion is the kubelet version the demo's Nodes report.
const NodeVersion = "v1.36.3"

func (m *member) createNode(ctx context.Context, i int) error {
	zone := fmt.Sprintf("%s%c", m.plan.region, 'a'+rune(i%3))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.nodeName(i),
			Labels: map[string]string{
				"kubernetes.io/os":                 "linux",
				"node-role.kubernetes.io/worker":   "",
				"kubernetes.io/arch":               "amd64",
				"node.kubernetes.io/instance-type": []string{"m6i.2xlarge", "m6i.4xlarge"}[i%2],
				"topology.kubernetes.io/region":    m.plan.region,
				"topology.kubernetes.io/zone":      zone,
			},
		},
	}
	created, err := m.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", node.Name, err)
	}
	m.created.Add(1)
	// No kubelet reports the Node: write what it would, so that kubectl's
	// STATUS is Ready and VERSION the kubelet's. No node lifecycle
	// controller runs either, so the heartbeat never turns it Unknown.
	now := metav1.Now()
	created.Status = corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.0.%d", len(m.plan.name), i+10)},
			{Type: corev1.NodeHostName, Address: node.Name},
		},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m"), corev1.ResourceMemory: resource.MustParse("31Gi"), corev1.ResourcePods: resource.MustParse("110")},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: NodeVersion, OSImage: "Debian GNU/Linux 13 (trixie)", KernelVersion: "6.12.0-demo",
			ContainerRuntimeVersion: "containerd://2.1.0", OperatingSystem: "linux", Architecture: "amd64",
		},
	}
	if _, err := m.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("report node %s ready: %w", node.Name, err)
	}
	return nil
}

func (m *member) createNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": name, "env": m.plan.env}}}
	if _, err := m.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	m.created.Add(1)
	return nil
}

// labels are the labels every object of an app carries.
func (m *member) labels(a *app) map[string]string {
	return map[string]string{
		"app":                         a.name,
		"app.kubernetes.io/name":      a.name,
		"app.kubernetes.io/part-of":   a.namespace,
		"app.kubernetes.io/component": a.tier,
		"team":                        a.namespace,
		"tier":                        a.tier,
		"env":                         m.plan.env,
		"region":                      m.plan.region,
	}
}

// templateHash is a stable stand-in for the pod-template-hash the Deployment
// controller computes: a hash of where the template lives and its revision,
// written with the letters Kubernetes uses for generated names.
func templateHash(cluster, namespace, app string, revision int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%s/%d", cluster, namespace, app, revision)
	return encodeSafe(uint64(h.Sum32()), 10)
}

// safeAlphabet has no vowels and no easily confused characters, like the
// suffixes Kubernetes generates.
const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// encodeSafe writes n in safeAlphabet, at most width characters.
func encodeSafe(n uint64, width int) string {
	b := make([]byte, 0, width)
	for n > 0 && len(b) < width {
		b = append(b, safeAlphabet[n%uint64(len(safeAlphabet))])
		n /= uint64(len(safeAlphabet))
	}
	return string(b)
}

// randomSuffix is a Pod name's random part.
func randomSuffix() string {
	b := make([]byte, 5)
	for i := range b {
		b[i] = safeAlphabet[rand.N(len(safeAlphabet))]
	}
	return string(b)
}

// ownerRef is the controller reference to an owner, with its real UID.
func ownerRef(apiVersion, kind, name string, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid),
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

// podTemplate is an app's Pod template at a revision of its image.
func (m *member) podTemplate(a *app, revision int) corev1.PodTemplateSpec {
	port := int32(8080)
	c := corev1.Container{
		Name:  a.name,
		Image: fmt.Sprintf("registry.demo.fleetcache.io/%s/%s:1.%d.0", a.namespace, a.name, revision),
		Env:   []corev1.EnvVar{{Name: "ENV", Value: m.plan.env}, {Name: "REGION", Value: m.plan.region}},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: a.name + "-config"},
		}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
	if a.tier != "worker" {
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}}}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: m.labels(a)},
		Spec: corev1.PodSpec{
			ServiceAccountName: a.name,
			Containers:         []corev1.Container{c},
		},
	}
}

// createApp creates what a Deployment of replicas Pods consists of once
// rolled out: its ServiceAccount, ConfigMaps and Service, the Deployment, its
// current ReplicaSet (and an old, scaled-down one if withHistory) and the
// ReplicaSet's Pods, each owner with its real UID in the owned objects'
// ownerReferences, and their status as the controllers and kubelet would
// report it.
func (m *member) createApp(ctx context.Context, a *app, replicas int, withHistory bool) error {
	labels := m.labels(a)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: a.namespace, Name: name, Labels: labels}
	}
	core := m.client.CoreV1()
	if _, err := core.ServiceAccounts(a.namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta(a.name)}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service account %s/%s: %w", a.namespace, a.name, err)
	}
	m.created.Add(1)
	cms := []*corev1.ConfigMap{
		{ObjectMeta: meta(a.name + "-config"), Data: map[string]string{
			"LOG_LEVEL": "info", "LISTEN_ADDR": ":8080", "UPSTREAM": fmt.Sprintf("http://%s.%s.svc:80", a.name, a.namespace),
		}},
		{ObjectMeta: meta(a.name + "-flags"), Data: map[string]string{
			"flags.yaml": fmt.Sprintf("new-checkout: %t\ndark-mode: %t\n", m.plan.env == "staging", len(a.name)%2 == 0),
		}},
	}
	cms[0].Labels = with(labels, "config-version", "v1")
	for _, cm := range cms {
		if _, err := core.ConfigMaps(a.namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create config map %s/%s: %w", a.namespace, cm.Name, err)
		}
		m.created.Add(1)
	}
	if a.tier != "worker" {
		svc := &corev1.Service{ObjectMeta: meta(a.name), Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": a.name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		}}
		if _, err := core.Services(a.namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create service %s/%s: %w", a.namespace, a.name, err)
		}
		m.created.Add(1)
	}

	revision := 1
	if withHistory {
		revision = 2
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: meta(a.name),
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": a.name}},
			Template: m.podTemplate(a, revision),
		},
	}
	deploy.Annotations = map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(revision)}
	deploy, err := m.client.AppsV1().Deployments(a.namespace).Create(ctx, deploy, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create deployment %s/%s: %w", a.namespace, a.name, err)
	}
	m.created.Add(1)
	dOwner := ownerRef("apps/v1", "Deployment", deploy.Name, string(deploy.UID))
	if withHistory {
		if _, err := m.createReplicaSet(ctx, a, dOwner, 1, 0); err != nil {
			return err
		}
	}
	rs, err := m.createReplicaSet(ctx, a, dOwner, revision, replicas)
	if err != nil {
		return err
	}
	a.rsName, a.rsUID, a.hash = rs.Name, string(rs.UID), rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	for range replicas {
		if err := m.createPod(ctx, a); err != nil {
			return err
		}
	}
	return m.setReplicas(ctx, a, replicas, false)
}

// createReportJob creates a nightly CronJob in namespace with the Job it last
// started and that Job's Pod, both completed, each owned by the one before.
func (m *member) createReportJob(ctx context.Context, namespace string, nodes []string) error {
	const name = "nightly-report"
	labels := map[string]string{"app": name, "team": namespace, "env": m.plan.env, "region": m.plan.region}
	podSpec := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyOnFailure,
		Containers: []corev1.Container{{
			Name: "report", Image: "registry.demo.fleetcache.io/tools/report:2.3.1",
			Args: []string{"--namespace", namespace, "--since", "24h"},
		}},
	}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}
	cron := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: batchv1.CronJobSpec{
			Schedule:    "30 2 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}},
		},
	}
	cron, err := m.client.BatchV1().CronJobs(namespace).Create(ctx, cron, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create cron job %s/%s: %w", namespace, name, err)
	}
	m.created.Add(1)
	// The CronJob controller names a Job after its scheduled time in minutes.
	started := time.Now().Add(-6 * time.Hour).Truncate(time.Minute)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: fmt.Sprintf("%s-%d", name, started.Unix()/60), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{ownerRef("batch/v1", "CronJob", cron.Name, string(cron.UID))},
		},
		Spec: batchv1.JobSpec{Template: template},
	}
	job, err = m.client.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create job %s/%s: %w", namespace, job.Name, err)
	}
	m.created.Add(1)
	// The API server added the Job's controller-uid labels to its template;
	// the Pod carries them, as a Job controller's Pods do.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: job.Name + "-" + randomSuffix(), Labels: job.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{ownerRef("batch/v1", "Job", job.Name, string(job.UID))},
		},
		Spec: job.Spec.Template.Spec,
	}
	pod.Spec.NodeName = nodes[rand.N(len(nodes))]
	pod, err = m.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod of job %s/%s: %w", namespace, job.Name, err)
	}
	m.created.Add(1)
	begin, end := metav1.NewTime(started), metav1.NewTime(started.Add(4*time.Minute))
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodSucceeded,
		StartTime: &begin,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "report", Image: podSpec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: begin, FinishedAt: end}},
		}},
	}
	if _, err := m.client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of pod %s/%s: %w", namespace, pod.Name, err)
	}
	job.Status = batchv1.JobStatus{
		StartTime: &begin, CompletionTime: &end, Succeeded: 1, Ready: new(int32(0)), Terminating: new(int32(0)),
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: end, LastProbeTime: end},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: end, LastProbeTime: end},
		},
	}
	if _, err := m.client.BatchV1().Jobs(namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of job %s/%s: %w", namespace, job.Name, err)
	}
	return nil
}

// createReplicaSet creates revision's ReplicaSet of a's Deployment, owned by it.
func (m *member) createReplicaSet(ctx context.Context, a *app, owner metav1.OwnerReference, revision, replicas int) (*appsv1.ReplicaSet, error) {
	hash := templateHash(m.plan.name, a.namespace, a.name, revision)
	tmpl := m.podTemplate(a, revision)
	tmpl.Labels = with(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       a.namespace,
			Name:            a.name + "-" + hash,
			Labels:          tmpl.Labels,
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(revision)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: new(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": a.name, appsv1.DefaultDeploymentUniqueLabelKey: hash}},
			Template: tmpl,
		},
	}
	rs, err := m.client.AppsV1().ReplicaSets(a.namespace).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create replica set %s/%s: %w", a.namespace, a.name, err)
	}
	m.created.Add(1)
	return rs, nil
}

// createPod creates one more Pod of a's current ReplicaSet, bound to a node
// and reported running and ready.
func (m *member) createPod(ctx context.Context, a *app) error {
	revision := 1
	if a.hash == templateHash(m.plan.name, a.namespace, a.name, 2) {
		revision = 2
	}
	tmpl := m.podTemplate(a, revision)
	node := a.nodes[rand.N(len(a.nodes))]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       a.namespace,
			Name:            a.rsName + "-" + randomSuffix(),
			Labels:          with(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey, a.hash),
			OwnerReferences: []metav1.OwnerReference{ownerRef("apps/v1", "ReplicaSet", a.rsName, a.rsUID)},
		},
		Spec: tmpl.Spec,
	}
	pod.Spec.NodeName = node
	pod, err := m.client.CoreV1().Pods(a.namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod of %s/%s: %w", a.namespace, a.name, err)
	}
	m.created.Add(1)
	now := metav1.Now()
	ready := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	ip := fmt.Sprintf("10.%d.%d.%d", 100+slices.Index(a.nodes, node), rand.N(256), 1+rand.N(254))
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: ready,
		HostIP:     fmt.Sprintf("192.168.0.%d", 10+slices.Index(a.nodes, node)),
		PodIP:      ip,
		PodIPs:     []corev1.PodIP{{IP: ip}},
		StartTime:  &now,
		QOSClass:   corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: tmpl.Spec.Containers[0].Name, Image: tmpl.Spec.Containers[0].Image, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	if _, err := m.client.CoreV1().Pods(a.namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of pod %s/%s: %w", a.namespace, pod.Name, err)
	}
	a.pods = append(a.pods, pod.Name)
	return nil
}

// setReplicas records that a's Deployment and current ReplicaSet run n
// ready Pods: their status and, if spec, their spec.replicas too.
func (m *member) setReplicas(ctx context.Context, a *app, n int, spec bool) error {
	apps := m.client.AppsV1()
	if spec {
		patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
		if _, err := apps.Deployments(a.namespace).Patch(ctx, a.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("scale deployment %s/%s: %w", a.namespace, a.name, err)
		}
		if _, err := apps.ReplicaSets(a.namespace).Patch(ctx, a.rsName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("scale replica set %s/%s: %w", a.namespace, a.rsName, err)
		}
	}
	rsStatus := fmt.Appendf(nil, `{"status":{"replicas":%d,"fullyLabeledReplicas":%[1]d,"readyReplicas":%[1]d,"availableReplicas":%[1]d,"observedGeneration":1}}`, n)
	if _, err := apps.ReplicaSets(a.namespace).Patch(ctx, a.rsName, types.MergePatchType, rsStatus, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("update status of replica set %s/%s: %w", a.namespace, a.rsName, err)
	}
	dStatus := fmt.Appendf(nil, `{"status":{"replicas":%d,"updatedReplicas":%[1]d,"readyReplicas":%[1]d,"availableReplicas":%[1]d,"observedGeneration":1,`+
		`"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."}]}}`, n)
	if _, err := apps.Deployments(a.namespace).Patch(ctx, a.name, types.MergePatchType, dStatus, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("update status of deployment %s/%s: %w", a.namespace, a.name, err)
	}
	return nil
}

// createWidgetCRD creates the Widget CustomResourceDefinition and waits
// until the API server serves the type, so that Widgets can be created and
// the aggregator finds the type on its first discovery.
func (m *member) createWidgetCRD(ctx context.Context) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": WidgetResource},
		"spec": map[string]any{
			"group": widgetGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": []any{"wd"}},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type":     "object",
							"required": []any{"color", "size"},
							"properties": map[string]any{
								"color": map[string]any{"type": "string", "enum": toAny(widgetColors)},
								"size":  map[string]any{"type": "integer", "minimum": int64(1), "maximum": int64(10)},
								"owner": map[string]any{"type": "string"},
							},
						},
					},
				}},
				"additionalPrinterColumns": []any{
					map[string]any{"name": "Color", "type": "string", "jsonPath": ".spec.color"},
					map[string]any{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
				},
			}},
		},
	}}
	if _, err := m.dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create custom resource definition %s: %w", WidgetResource, err)
	}
	m.created.Add(1)
	ctx, cancel := context.WithTimeout(ctx, crdTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := m.client.Discovery().ServerResourcesForGroupVersion(widgetGVR.GroupVersion().String())
		if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == widgetGVR.Resource }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until %s is served: %w (last discovery error: %v)", WidgetResource, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// createWidget creates Widget name in namespace; i varies its spec.
func (m *member) createWidget(ctx context.Context, namespace, name string, i int) error {
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetGVR.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{
			"namespace": namespace, "name": name,
			"labels": map[string]any{"team": namespace, "env": m.plan.env, "color": widgetColors[i%len(widgetColors)]},
		},
		"spec": map[string]any{"color": widgetColors[i%len(widgetColors)], "size": int64(1 + (i*3+len(m.plan.name))%10), "owner": namespace},
	}}
	if _, err := m.dynamic.Resource(widgetGVR).Namespace(namespace).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create widget %s/%s: %w", namespace, name, err)
	}
	m.created.Add(1)
	return nil
}

// with returns a copy of labels with key set to value.
func with(labels map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[key] = value
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
