package deploy_test

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcert"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

const (
	chartDir        = "helm/fleetcache"
	allValues       = "testdata/values-all.yaml"
	inventoryValues = "testdata/values-inventory.yaml"
	releaseNS       = "fleet"
	configPath      = "/etc/fleetcache/config.yaml"
	memberRoleYML   = "member-cluster/clusterrole.yaml"
	// authDelegatorCRB binds system:auth-delegator to the ServiceAccount;
	// the namespace is in its name because the binding is cluster-wide.
	authDelegatorCRB = "fleetcache-" + releaseNS + "-auth-delegator"
	tlsDir           = "/etc/fleetcache/tls"
)

// helm runs the helm CLI of bin/ (or $FLEETCACHE_TESTBIN) with a private
// home and no kubeconfig, so that nothing on the machine leaks in or out.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, stderr, err := runHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// runHelm runs the helm CLI as helm does and returns its standard output,
// its standard error and whether it failed, for the tests of what the chart
// refuses.
func runHelm(t *testing.T, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	testcluster.SkipShort(t, "bin/helm (make testbin)")
	dir := os.Getenv("FLEETCACHE_TESTBIN")
	if dir == "" {
		dir = filepath.Join("..", "bin")
	}
	bin, err := filepath.Abs(filepath.Join(dir, "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm CLI missing (run make testbin): %v", err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "kubeconfig"))
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	return out, errBuf.Bytes(), err
}

// object is one rendered manifest: always as unstructured, and typed when
// client-go's scheme knows its kind.
type object struct {
	u     *unstructured.Unstructured
	typed runtime.Object
}

func (o object) String() string { return o.u.GetKind() + " " + o.u.GetName() }

// render runs helm template on the chart with the extra arguments and
// decodes every document.
func render(t *testing.T, args ...string) []object {
	t.Helper()
	return decodeManifests(t, helm(t, append([]string{"template", "fleetcache", chartDir, "--namespace", releaseNS}, args...)...))
}

// strict rejects unknown and duplicate fields, so a misspelt key in a
// template fails here rather than being dropped by the API server.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// decodeManifests decodes a multi-document YAML stream. Every document must
// have apiVersion, kind and name; kinds client-go knows must decode strictly
// into their Go types.
func decodeManifests(t *testing.T, data []byte) []object {
	t.Helper()
	var objs []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("document is not YAML: %v\n%s", err, doc)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue // only comments, or empty
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("document is not a Kubernetes object: %v\n%s", err, doc)
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			t.Fatalf("document lacks apiVersion, kind or name:\n%s", doc)
		}
		typed, _, err := strict.Decode(js, nil, nil)
		switch {
		case runtime.IsNotRegisteredError(err):
			typed = nil // ServiceMonitor, PrometheusRule: checked as unstructured
		case err != nil:
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		objs = append(objs, object{u: u, typed: typed})
	}
}

// find returns the only rendered object of the kind, typed as T when T is
// a client-go type.
func find[T any](t *testing.T, objs []object, kind string) T {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.u.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s, rendered %v", kind, found)
	}
	var zero T
	if u, ok := any(found[0].u).(T); ok {
		return u
	}
	typed, ok := found[0].typed.(T)
	if !ok {
		t.Fatalf("%s decoded as %T, not %T", kind, found[0].typed, zero)
	}
	return typed
}

func TestChartLint(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "defaults"},
		{name: "everything on", args: []string{"--values", allValues}},
		{name: "inventories", args: []string{"--values", inventoryValues}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := helm(t, append([]string{"lint", "--strict", chartDir}, tt.args...)...)
			if !bytes.Contains(out, []byte("0 chart(s) failed")) {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

func TestChartRenders(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "defaults",
			want: []string{
				"ClusterRoleBinding " + authDelegatorCRB, "ConfigMap fleetcache", "Deployment fleetcache",
				"PodDisruptionBudget fleetcache", "Role fleetcache-cluster-secrets", "RoleBinding fleetcache-cluster-secrets", "Service fleetcache",
				"ServiceAccount fleetcache",
			},
		},
		{
			name: "everything on",
			args: []string{"--values", allValues},
			want: []string{
				"ClusterRole fleetcache-member", "ClusterRoleBinding " + authDelegatorCRB,
				"ClusterRoleBinding fleetcache-member", "ConfigMap fleetcache",
				"Deployment fleetcache", "PodDisruptionBudget fleetcache", "PrometheusRule fleetcache", "Role fleetcache-cluster-secrets",
				"RoleBinding fleetcache-cluster-secrets", "Secret fleetcache-kubeconfigs", "Service fleetcache",
				"ServiceAccount fleetcache", "ServiceMonitor fleetcache",
			},
		},
		{
			name: "no cluster Secrets, existing kubeconfig Secret, no ServiceAccount",
			args: []string{"--set", "clusterSecrets.enabled=false", "--set", "kubeconfigs.existingSecret=mine",
				"--set", "serviceAccount.create=false"},
			want: []string{"ClusterRoleBinding " + authDelegatorCRB, "ConfigMap fleetcache", "Deployment fleetcache", "PodDisruptionBudget fleetcache", "Service fleetcache"},
		},
		{
			name: "no authentication, no cluster Secrets",
			args: []string{"--set", "authn.mode=none", "--set", "clusterSecrets.enabled=false"},
			want: []string{"ConfigMap fleetcache", "Deployment fleetcache", "PodDisruptionBudget fleetcache", "Service fleetcache", "ServiceAccount fleetcache"},
		},
		{
			name: "auth-delegator granted elsewhere",
			args: []string{"--set", "authn.authDelegator=false", "--set", "clusterSecrets.enabled=false"},
			want: []string{"ConfigMap fleetcache", "Deployment fleetcache", "PodDisruptionBudget fleetcache", "Service fleetcache", "ServiceAccount fleetcache"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range render(t, tt.args...) {
				got = append(got, o.String())
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChartDeployment(t *testing.T) {
	objs := render(t)
	d := find[*appsv1.Deployment](t, objs, "Deployment")
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if diff := cmp.Diff([]string{"--config", configPath}, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports = %+v, want http 8080", c.Ports)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe = %+v, want GET %s on port http", p.name, p.probe, p.path)
		}
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %+v, want memory requests and limits", c.Resources)
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext = %+v, want non-root", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext = %+v, want read-only root and no privilege escalation", sc)
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation: a config change would not restart the pods")
	}
	if sa := find[*corev1.ServiceAccount](t, objs, "ServiceAccount"); pod.ServiceAccountName != sa.Name {
		t.Errorf("pod runs as %q, chart creates ServiceAccount %q", pod.ServiceAccountName, sa.Name)
	}

	// The config file is the ConfigMap's config.yaml, mounted where --config points.
	cm := find[*corev1.ConfigMap](t, objs, "ConfigMap")
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == configPath })
	if i < 0 {
		t.Fatalf("nothing mounted at %s: %+v", configPath, c.VolumeMounts)
	}
	m := c.VolumeMounts[i]
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
	if j < 0 || pod.Volumes[j].ConfigMap == nil || pod.Volumes[j].ConfigMap.Name != cm.Name || m.SubPath != "config.yaml" {
		t.Errorf("%s is mount %+v of volumes %+v, want config.yaml of ConfigMap %s", configPath, m, pod.Volumes, cm.Name)
	}
	if _, ok := cm.Data["config.yaml"]; !ok {
		t.Errorf("ConfigMap %s has no config.yaml", cm.Name)
	}

	// The Service reaches these pods on their http port.
	svc := find[*corev1.Service](t, objs, "Service")
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service selects %s=%s, pods are labelled %v", k, v, d.Spec.Template.Labels)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports = %+v, want one to target port http", svc.Spec.Ports)
	}
}

func TestChartConfig(t *testing.T) {
	objs := render(t, "--values", allValues)
	cm := find[*corev1.ConfigMap](t, objs, "ConfigMap")
	var got map[string]any
	if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &got); err != nil {
		t.Fatalf("config.yaml: %v\n%s", err, cm.Data["config.yaml"])
	}
	want := map[string]any{
		"addr":           ":8080",
		"kubeconfigs":    []any{},
		"kubeconfigDir":  "/etc/fleetcache/kubeconfigs",
		"contexts":       []any{},
		"clusterSecrets": map[string]any{"namespace": "fleet-secrets"},
		"clusters":       map[string]any{},
		"resources":      []any{"pods", "deployments.apps", "widgets.example.com", "replicasets.apps"},
		"readyz":         map[string]any{"exclude": []any{"flaky"}, "disabled": false},
		"limits":         map[string]any{"maxPageSize": float64(500), "requestTimeout": "20s"},
		"log":            map[string]any{"level": float64(4), "format": "text"},
		"authn":          map[string]any{"mode": "tokenreview", "cacheTTL": "20s"},
		"authz":          map[string]any{"mode": "subjectaccessreview", "cacheTTL": "1m", "cacheSize": float64(5000)},
		"serving": map[string]any{
			"tlsCertFile":        tlsDir + "/tls.crt",
			"tlsPrivateKeyFile":  tlsDir + "/tls.key",
			"corsAllowedOrigins": []any{"https://portal.example.com"},
			"rateLimit":          map[string]any{"queriesPerSecond": float64(20), "queryBurst": float64(40)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config.yaml (-want +got):\n%s", diff)
	}

	// The aggregator itself accepts the file.
	loadConfig(t, cm)
	loadConfig(t, find[*corev1.ConfigMap](t, render(t), "ConfigMap"))

	// A changed config changes the checksum, so the pods restart to read it.
	sum := find[*appsv1.Deployment](t, objs, "Deployment").Spec.Template.Annotations["checksum/config"]
	if def := find[*appsv1.Deployment](t, render(t), "Deployment").Spec.Template.Annotations["checksum/config"]; sum == def {
		t.Errorf("checksum/config %s is the same for different configs", sum)
	}

	// The kubeconfig files are mounted where kubeconfigDir points.
	d := find[*appsv1.Deployment](t, objs, "Deployment")
	secret := find[*corev1.Secret](t, objs, "Secret")
	mounted := false
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			mounted = mounted || m.Name == v.Name && m.MountPath == "/etc/fleetcache/kubeconfigs" &&
				v.Secret != nil && v.Secret.SecretName == secret.Name
		}
	}
	if !mounted {
		t.Errorf("Secret %s not mounted at /etc/fleetcache/kubeconfigs", secret.Name)
	}
	if _, ok := secret.Data["prod.yaml"]; !ok {
		t.Errorf("Secret %s keys %v, want prod.yaml", secret.Name, slices.Collect(maps.Keys(secret.Data)))
	}

	// Secrets are readable only in the cluster-secrets namespace, by the pod's ServiceAccount.
	role := find[*rbacv1.Role](t, objs, "Role")
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}}
	if diff := cmp.Diff(wantRules, role.Rules); diff != "" || role.Namespace != "fleet-secrets" {
		t.Errorf("Role in namespace %q (want fleet-secrets), rules (-want +got):\n%s", role.Namespace, diff)
	}
	rb := find[*rbacv1.RoleBinding](t, objs, "RoleBinding")
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: d.Spec.Template.Spec.ServiceAccountName, Namespace: releaseNS}}
	if diff := cmp.Diff(wantSubjects, rb.Subjects); diff != "" || rb.RoleRef.Name != role.Name || rb.Namespace != role.Namespace {
		t.Errorf("RoleBinding %s/%s to %s, subjects (-want +got):\n%s", rb.Namespace, rb.Name, rb.RoleRef.Name, diff)
	}
}

// loadConfig loads and validates the rendered config file as the aggregator
// does at start-up. Paths that exist only in the pod are pointed at local
// stand-ins first: the kubeconfig directory at an empty directory, the TLS
// files at a fresh self-signed pair.
func loadConfig(t *testing.T, cm *corev1.ConfigMap) app.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KubeconfigDir != "" {
		cfg.KubeconfigDir = t.TempDir()
	}
	if cfg.Serving.TLSCertFile != "" {
		cfg.Serving.TLSCertFile, cfg.Serving.TLSPrivateKeyFile, _ = writeServingCert(t)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("invalid config: %v\n%s", err, cm.Data["config.yaml"])
	}
	return cfg
}

// writeServingCert writes a self-signed certificate for 127.0.0.1 and its
// key as PEM files, and returns their paths and a pool that trusts it.
func writeServingCert(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	p := testcert.New(t, "fleetcache")
	certFile, keyFile = p.Write(t, t.TempDir())
	return certFile, keyFile, p.Pool
}

// TestChartTLS checks that serving.tls.secretName mounts the Secret where
// the config file's TLS files point, and turns the probes and the scrape to
// HTTPS; without it everything stays plain HTTP.
func TestChartTLS(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantScheme corev1.URIScheme
	}{
		{name: "plain HTTP", args: []string{"--set", "serviceMonitor.enabled=true"}, wantScheme: ""},
		{name: "TLS", args: []string{"--set", "serviceMonitor.enabled=true", "--set", "serving.tls.secretName=fleetcache-tls"}, wantScheme: corev1.URISchemeHTTPS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, tt.args...)
			d := find[*appsv1.Deployment](t, objs, "Deployment")
			pod := d.Spec.Template.Spec
			c := pod.Containers[0]
			for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if p.HTTPGet.Scheme != tt.wantScheme {
					t.Errorf("%s probe scheme %q, want %q", name, p.HTTPGet.Scheme, tt.wantScheme)
				}
			}
			sm := find[*unstructured.Unstructured](t, objs, "ServiceMonitor")
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			scheme, _, _ := unstructured.NestedString(endpoints[0].(map[string]any), "scheme")
			if want := strings.ToLower(string(tt.wantScheme)); scheme != want {
				t.Errorf("ServiceMonitor scheme %q, want %q", scheme, want)
			}

			cfg := loadConfig(t, find[*corev1.ConfigMap](t, objs, "ConfigMap"))
			i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == tlsDir })
			if tt.wantScheme == "" {
				if i >= 0 || cfg.Serving.TLSCertFile != "" {
					t.Errorf("plain HTTP, but %s mounted (%v) or TLS configured: %+v", tlsDir, i >= 0, cfg.Serving)
				}
				return
			}
			// loadConfig replaced the file names; check the rendered ones.
			var raw struct{ Serving app.ServingConfig }
			if err := yaml.Unmarshal([]byte(find[*corev1.ConfigMap](t, objs, "ConfigMap").Data["config.yaml"]), &raw); err != nil {
				t.Fatal(err)
			}
			if raw.Serving.TLSCertFile != tlsDir+"/tls.crt" || raw.Serving.TLSPrivateKeyFile != tlsDir+"/tls.key" {
				t.Errorf("serving TLS files %q %q, want tls.crt and tls.key of %s", raw.Serving.TLSCertFile, raw.Serving.TLSPrivateKeyFile, tlsDir)
			}
			if i < 0 || !c.VolumeMounts[i].ReadOnly {
				t.Fatalf("%s not mounted read-only: %+v", tlsDir, c.VolumeMounts)
			}
			j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
			if j < 0 || pod.Volumes[j].Secret == nil || pod.Volumes[j].Secret.SecretName != "fleetcache-tls" {
				t.Errorf("%s is not Secret fleetcache-tls: %+v", tlsDir, pod.Volumes)
			}
		})
	}
}

// TestChartAuth checks each authentication and authorization setting: what
// the config file says, the auth-delegator binding in the home cluster, the
// ServiceAccount token the in-cluster TokenReview client needs, and whether
// members are asked to allow SubjectAccessReviews.
func TestChartAuth(t *testing.T) {
	rules := []authz.Rule{{Groups: []string{"team-a"}, Clusters: []string{"c1"}, Namespaces: []string{"team-a"}, Resources: []string{"pods"}}}
	rulesJSON, err := json.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	// Without cluster Secrets only authentication needs the API token.
	base := []string{"--set", "clusterSecrets.enabled=false", "--set", "memberRBAC.create=true"}
	tests := []struct {
		name          string
		args          []string
		wantAuthn     app.AuthnConfig
		wantAuthz     app.AuthzConfig
		wantDelegator bool
		wantSAR       bool
	}{
		{
			name:          "defaults: token reviews, members decide",
			wantAuthn:     app.AuthnConfig{Mode: app.AuthnTokenReview},
			wantAuthz:     app.AuthzConfig{Mode: app.AuthzSubjectAccessReview},
			wantDelegator: true,
			wantSAR:       true,
		},
		{
			name:          "policy",
			args:          []string{"--set", "authz.mode=policy", "--set-json", "authz.rules=" + string(rulesJSON), "--set", "authz.cacheTTL=5s"},
			wantAuthn:     app.AuthnConfig{Mode: app.AuthnTokenReview},
			wantAuthz:     app.AuthzConfig{Mode: app.AuthzPolicy, Rules: rules, CacheTTL: metav1.Duration{Duration: 5 * time.Second}},
			wantDelegator: true,
		},
		{
			name:      "no authentication",
			args:      []string{"--set", "authn.mode=none"},
			wantAuthn: app.AuthnConfig{Mode: app.AuthnNone},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := render(t, append(slices.Clone(base), tt.args...)...)
			cfg := loadConfig(t, find[*corev1.ConfigMap](t, objs, "ConfigMap"))
			if diff := cmp.Diff(tt.wantAuthn, cfg.Authn); diff != "" {
				t.Errorf("authn (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAuthz, cfg.Authz); diff != "" {
				t.Errorf("authz (-want +got):\n%s", diff)
			}

			d := find[*appsv1.Deployment](t, objs, "Deployment")
			pod := d.Spec.Template.Spec
			if got := pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken; got != tt.wantDelegator {
				t.Errorf("automountServiceAccountToken %t, want %t: the in-cluster TokenReview client needs the token", got, tt.wantDelegator)
			}
			var bindings []*rbacv1.ClusterRoleBinding
			for _, o := range objs {
				if b, ok := o.typed.(*rbacv1.ClusterRoleBinding); ok && b.RoleRef.Name == "system:auth-delegator" {
					bindings = append(bindings, b)
				}
			}
			if !tt.wantDelegator {
				if len(bindings) > 0 {
					t.Errorf("auth-delegator bound without authentication: %v", bindings[0].Name)
				}
			} else {
				wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: pod.ServiceAccountName, Namespace: releaseNS}}
				if len(bindings) != 1 || bindings[0].RoleRef.Kind != "ClusterRole" {
					t.Fatalf("want one ClusterRoleBinding to ClusterRole system:auth-delegator, got %v", bindings)
				}
				if diff := cmp.Diff(wantSubjects, bindings[0].Subjects); diff != "" {
					t.Errorf("auth-delegator subjects (-want +got):\n%s", diff)
				}
			}

			cr := find[*rbacv1.ClusterRole](t, objs, "ClusterRole")
			want := append(memberRules(informers.DefaultResources), identityRule)
			if tt.wantSAR {
				want = append(want, sarRule)
			}
			if diff := cmp.Diff(want, cr.Rules); diff != "" {
				t.Errorf("member ClusterRole (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChartMonitoring(t *testing.T) {
	objs := render(t, "--values", allValues)
	svc := find[*corev1.Service](t, objs, "Service")
	sm := find[*unstructured.Unstructured](t, objs, "ServiceMonitor")
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %s", sm.GetAPIVersion())
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, Service is labelled %v", k, v, svc.Labels)
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	want := []any{map[string]any{"port": "http", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s",
		"scheme": "https", "tlsConfig": map[string]any{"serverName": "fleetcache.fleet.svc"}}}
	if diff := cmp.Diff(want, endpoints); diff != "" {
		t.Errorf("ServiceMonitor endpoints (-want +got):\n%s", diff)
	}
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v lack serviceMonitor.labels", sm.GetLabels())
	}

	// The PrometheusRule carries exactly the rules of the plain rule file.
	pr := find[*unstructured.Unstructured](t, objs, "PrometheusRule")
	plain, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var wantSpec map[string]any
	if err := yaml.Unmarshal(plain, &wantSpec); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantSpec, pr.Object["spec"]); diff != "" {
		t.Errorf("PrometheusRule spec differs from %s (-want +got):\n%s", alertsFile, diff)
	}
}

// identityRule lets fleetcache read who a member is: the UID of its
// kube-system namespace.
var identityRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"kube-system"}, Verbs: []string{"get"}}

// sarRule lets fleetcache ask a member cluster what a caller may list.
var sarRule = rbacv1.PolicyRule{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}

// memberRules are the rules the member ClusterRole must have for the
// configured types: list and watch, one rule per API group, in the order
// the groups first appear.
func memberRules(resources []string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	byGroup := map[string]int{}
	for _, name := range resources {
		resource, group, _ := strings.Cut(name, ".")
		i, ok := byGroup[group]
		if !ok {
			i = len(rules)
			byGroup[group] = i
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{group}, Verbs: []string{"list", "watch"}})
		}
		rules[i].Resources = append(rules[i].Resources, resource)
	}
	return rules
}

func readClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(memberRoleYML)
	if err != nil {
		t.Fatal(err)
	}
	return find[*rbacv1.ClusterRole](t, decodeManifests(t, data), "ClusterRole")
}

// TestMemberClusterRoleRules keeps the static ClusterRole, the chart's list
// of default types and the chart's rendered ClusterRole equal to
// informers.DefaultResources, plus creating SubjectAccessReviews (default
// authorization; TestChartAuth covers the other modes).
func TestMemberClusterRoleRules(t *testing.T) {
	want := append(memberRules(informers.DefaultResources), identityRule, sarRule)
	if diff := cmp.Diff(want, readClusterRole(t).Rules); diff != "" {
		t.Errorf("%s is not DefaultResources (-want +got):\n%s", memberRoleYML, diff)
	}

	data, err := os.ReadFile(filepath.Join(chartDir, "files", "default-resources.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chartDefaults []string
	if err := yaml.UnmarshalStrict(data, &chartDefaults); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(informers.DefaultResources, chartDefaults); diff != "" {
		t.Errorf("the chart's default resources are not DefaultResources (-want +got):\n%s", diff)
	}

	tests := []struct {
		name      string
		args      []string
		resources []string
	}{
		{name: "default types", args: []string{"--set", "memberRBAC.create=true"}, resources: informers.DefaultResources},
		{name: "configured types", args: []string{"--values", allValues}, resources: []string{"pods", "deployments.apps", "widgets.example.com", "replicasets.apps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := find[*rbacv1.ClusterRole](t, render(t, tt.args...), "ClusterRole")
			if diff := cmp.Diff(append(memberRules(tt.resources), identityRule, sarRule), cr.Rules); diff != "" {
				t.Errorf("rendered member ClusterRole (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChartInventory checks the inventory sources' values: the config file
// enables them, the providers file is mounted where it points and parses,
// and each source may read exactly its objects (a ClusterRole for every
// namespace, else a Role in its namespace) and nothing else.
func TestChartInventory(t *testing.T) {
	objs := render(t, "--values", inventoryValues)
	var cm *corev1.ConfigMap
	var providers *corev1.ConfigMap
	for _, o := range objs {
		if c, ok := o.typed.(*corev1.ConfigMap); ok && c.Name == "fleetcache" {
			cm = c
		} else if ok && c.Name == "fleetcache-providers" {
			providers = c
		}
	}
	if cm == nil || providers == nil {
		t.Fatalf("ConfigMaps fleetcache and fleetcache-providers not both rendered: %v", objs)
	}
	cfg := loadConfig(t, cm)
	want := app.Config{
		ClusterProfiles: app.InventorySourceConfig{Enabled: true, ProvidersFile: "/etc/fleetcache/providers/providers.json"},
		ClusterAPI:      app.InventorySourceConfig{Enabled: true, Namespace: "capi-clusters"},
		ArgoCD:          app.InventorySourceConfig{Enabled: true, Namespace: "argocd", AllowExecPlugins: true},
		Clusters:        map[string]app.ClusterConfig{"prod-eu": {Labels: map[string]string{"env": "prod", "region": "eu"}}},
	}
	got := app.Config{ClusterProfiles: cfg.ClusterProfiles, ClusterAPI: cfg.ClusterAPI, ArgoCD: cfg.ArgoCD, Clusters: cfg.Clusters}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	p, err := clusters.ParseProviders([]byte(providers.Data["providers.json"]))
	if err != nil {
		t.Fatalf("providers.json: %v\n%s", err, providers.Data["providers.json"])
	}
	if names := p.Names(); !slices.Equal(names, []string{"open-cluster-management"}) {
		t.Errorf("providers %v", names)
	}
	d := find[*appsv1.Deployment](t, objs, "Deployment")
	mounted := false
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			mounted = mounted || m.Name == v.Name && m.MountPath == "/etc/fleetcache/providers" &&
				v.ConfigMap != nil && v.ConfigMap.Name == providers.Name
		}
	}
	if !mounted {
		t.Errorf("%s not mounted at /etc/fleetcache/providers", providers.Name)
	}
	// The sources read the cluster fleetcache runs in, with its token.
	noAuth := render(t, "--values", inventoryValues, "--set", "authn.mode=none", "--set", "clusterSecrets.enabled=false")
	if m := find[*appsv1.Deployment](t, noAuth, "Deployment").Spec.Template.Spec.AutomountServiceAccountToken; m == nil || !*m {
		t.Errorf("automountServiceAccountToken %v with inventories on, want true", m)
	}

	type grant struct{ Kind, Namespace, Name string }
	var grants []grant
	rules := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch r := o.typed.(type) {
		case *rbacv1.Role:
			grants = append(grants, grant{"Role", r.Namespace, r.Name})
			rules[r.Name] = r.Rules
		case *rbacv1.ClusterRole:
			grants = append(grants, grant{"ClusterRole", "", r.Name})
			rules[r.Name] = r.Rules
		}
	}
	wantGrants := []grant{
		{"ClusterRole", "", "fleetcache-inventory-clusterprofiles"},
		{"Role", "argocd", "fleetcache-inventory-argocd"},
		{"Role", "capi-clusters", "fleetcache-inventory-cluster-api"},
		{"Role", releaseNS, "fleetcache-cluster-secrets"},
	}
	slices.SortFunc(grants, func(a, b grant) int { return strings.Compare(a.Kind+a.Namespace, b.Kind+b.Namespace) })
	if diff := cmp.Diff(wantGrants, grants); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	read := []string{"get", "list", "watch"}
	for name, want := range map[string][]rbacv1.PolicyRule{
		"fleetcache-inventory-clusterprofiles": {{APIGroups: []string{"multicluster.x-k8s.io"}, Resources: []string{"clusterprofiles"}, Verbs: read}},
		"fleetcache-inventory-argocd":          {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: read}},
		"fleetcache-inventory-cluster-api":     {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: read}},
	} {
		if diff := cmp.Diff(want, rules[name]); diff != "" {
			t.Errorf("%s rules (-want +got):\n%s", name, diff)
		}
	}
}
