package deploy_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// snapshotEnv names the snapshot directory for the aggregator's warm start.
const snapshotEnv = "FLEETCACHE_SNAPSHOT_DIR"

// TestChartHighAvailability checks what keeps the Service up while a
// replica goes: two replicas; a rollout that starts a new pod before it
// stops an old one and stops none before its successor is ready; a
// disruption budget over exactly the pods; spreading over nodes and zones
// that prefers and never blocks; a preStop sleep inside a grace period long
// enough for the aggregator's shutdown.
func TestChartHighAvailability(t *testing.T) {
	objs := render(t)
	d := find[*appsv1.Deployment](t, objs, "Deployment")
	if r := d.Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("replicas %v, want 2", r)
	}
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	wantStrategy := appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one},
	}
	if diff := cmp.Diff(wantStrategy, d.Spec.Strategy); diff != "" {
		t.Errorf("strategy (-want +got):\n%s", diff)
	}
	if p := d.Spec.ProgressDeadlineSeconds; p == nil || *p < 600 {
		t.Errorf("progressDeadlineSeconds %v, want at least Kubernetes' 600: a new replica lists every cluster first", p)
	}

	podLabels := d.Spec.Template.Labels
	selects := func(sel *metav1.LabelSelector) bool {
		if sel == nil || len(sel.MatchLabels) == 0 {
			return false
		}
		for k, v := range sel.MatchLabels {
			if podLabels[k] != v {
				return false
			}
		}
		return true
	}
	pdb := find[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != one || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("budget minAvailable %v maxUnavailable %v, want minAvailable 1", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
	if !selects(pdb.Spec.Selector) || !cmp.Equal(pdb.Spec.Selector, d.Spec.Selector) {
		t.Errorf("budget selects %v, want the Deployment's selector %v", pdb.Spec.Selector, d.Spec.Selector)
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
		t.Errorf("unhealthyPodEvictionPolicy %v, want AlwaysAllow: an unready replica must not block a drain", p)
	}

	pod := d.Spec.Template.Spec
	var keys []string
	for _, c := range pod.TopologySpreadConstraints {
		keys = append(keys, c.TopologyKey)
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway || c.MaxSkew != 1 {
			t.Errorf("spread by %s: %s, maxSkew %d; want ScheduleAnyway, 1", c.TopologyKey, c.WhenUnsatisfiable, c.MaxSkew)
		}
		if !selects(c.LabelSelector) {
			t.Errorf("spread by %s counts %v, not the pods (%v)", c.TopologyKey, c.LabelSelector, podLabels)
		}
		if !slices.Equal(c.MatchLabelKeys, []string{appsv1.DefaultDeploymentUniqueLabelKey}) {
			t.Errorf("spread by %s: matchLabelKeys %v, want pod-template-hash", c.TopologyKey, c.MatchLabelKeys)
		}
	}
	if want := []string{corev1.LabelHostname, corev1.LabelTopologyZone}; !slices.Equal(keys, want) {
		t.Errorf("spread by %v, want %v", keys, want)
	}

	c := pod.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Fatalf("no preStop sleep: %+v", c.Lifecycle)
	}
	sleep := c.Lifecycle.PreStop.Sleep.Seconds
	if sleep < 1 || pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < sleep+10 {
		t.Errorf("preStop sleeps %d s in a grace period of %v s, want at least 1 s and the grace period 10 s more", sleep, pod.TerminationGracePeriodSeconds)
	}

	// One replica: no budget (it would block every drain), no sleep on demand.
	for _, o := range render(t, "--set", "replicaCount=1", "--set", "preStopSleepSeconds=0") {
		if o.u.GetKind() == "PodDisruptionBudget" {
			t.Errorf("one replica, but %s rendered", o)
		}
		if d, ok := o.typed.(*appsv1.Deployment); ok && d.Spec.Template.Spec.Containers[0].Lifecycle != nil {
			t.Errorf("preStopSleepSeconds 0, but lifecycle %+v", d.Spec.Template.Spec.Containers[0].Lifecycle)
		}
	}
	pdb = find[*policyv1.PodDisruptionBudget](t, render(t, "--set", "podDisruptionBudget.minAvailable=null", "--set", "podDisruptionBudget.maxUnavailable=1"), "PodDisruptionBudget")
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != one || pdb.Spec.MinAvailable != nil {
		t.Errorf("budget minAvailable %v maxUnavailable %v, want maxUnavailable 1", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
	d = find[*appsv1.Deployment](t, render(t, "--set-json", `topologySpreadConstraints=[{"maxSkew":2,"topologyKey":"rack","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"team":"a"}}}]`), "Deployment")
	wantSpread := []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "rack", WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}}
	if diff := cmp.Diff(wantSpread, d.Spec.Template.Spec.TopologySpreadConstraints); diff != "" {
		t.Errorf("configured spread, its own selector kept (-want +got):\n%s", diff)
	}
}

// TestChartSnapshotVolume checks each choice of snapshot.volume: the volume,
// mounted writable (the root file system is read-only) where
// FLEETCACHE_SNAPSHOT_DIR points; none of them with volume none.
func TestChartSnapshotVolume(t *testing.T) {
	size := resource.MustParse("4Gi")
	tests := []struct {
		name      string
		args      []string
		wantPath  string
		wantValue corev1.VolumeSource // zero: no volume
	}{
		{
			name:      "default: emptyDir",
			wantPath:  "/var/lib/fleetcache/snapshot",
			wantValue: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		},
		{
			name:      "emptyDir with a size limit, elsewhere",
			args:      []string{"--set", "snapshot.sizeLimit=4Gi", "--set", "snapshot.mountPath=/data/snap"},
			wantPath:  "/data/snap",
			wantValue: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}},
		},
		{
			name:     "ephemeral claim",
			args:     []string{"--set", "snapshot.volume=ephemeral", "--set", "snapshot.ephemeral.storageClassName=fast", "--set", "snapshot.ephemeral.size=4Gi"},
			wantPath: "/var/lib/fleetcache/snapshot",
			wantValue: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "fleetcache", "app.kubernetes.io/instance": "fleetcache"}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To("fast"),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				},
			}}},
		},
		{name: "none", args: []string{"--set", "snapshot.volume=none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := find[*appsv1.Deployment](t, render(t, tt.args...), "Deployment").Spec.Template.Spec
			c := pod.Containers[0]
			var env []corev1.EnvVar
			for _, e := range c.Env {
				if e.Name == snapshotEnv {
					env = append(env, e)
				}
			}
			i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "snapshot" })
			j := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "snapshot" })
			if tt.wantPath == "" {
				if i >= 0 || j >= 0 || len(env) > 0 {
					t.Errorf("volume none, but volume %d, mount %d, env %v", i, j, env)
				}
				return
			}
			if i < 0 || j < 0 {
				t.Fatalf("snapshot volume %d or mount %d missing: %+v", i, j, pod.Volumes)
			}
			if diff := cmp.Diff(tt.wantValue, pod.Volumes[i].VolumeSource); diff != "" {
				t.Errorf("snapshot volume (-want +got):\n%s", diff)
			}
			if m := c.VolumeMounts[j]; m.MountPath != tt.wantPath || m.ReadOnly || m.SubPath != "" {
				t.Errorf("snapshot mount %+v, want %s writable", m, tt.wantPath)
			}
			if want := []corev1.EnvVar{{Name: snapshotEnv, Value: tt.wantPath}}; !cmp.Equal(want, env) {
				t.Errorf("env %v, want %v", env, want)
			}
		})
	}
}

// TestChartRefuses checks the values the chart refuses to render, each with
// a message that says what to change.
func TestChartRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "a snapshot volume the chart does not know",
			args: []string{"--set", "snapshot.volume=pvc"},
			want: `snapshot.volume must be emptyDir, ephemeral or none, not "pvc"`,
		},
		{
			name: "a grace period shorter than the preStop sleep and the shutdown",
			args: []string{"--set", "preStopSleepSeconds=10", "--set", "terminationGracePeriodSeconds=15"},
			want: "terminationGracePeriodSeconds 15 is less than preStopSleepSeconds + 10 = 20",
		},
		{
			name: "both bounds of the disruption budget",
			args: []string{"--set", "podDisruptionBudget.maxUnavailable=1"},
			want: "podDisruptionBudget: set minAvailable or maxUnavailable, not both",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runHelm(t, append([]string{"template", "fleetcache", chartDir, "--namespace", releaseNS}, tt.args...)...)
			if err == nil || !bytes.Contains(stderr, []byte(tt.want)) {
				t.Errorf("helm template: err %v, stderr %q, want an error saying %q\n%s", err, stderr, tt.want, out)
			}
		})
	}
}
