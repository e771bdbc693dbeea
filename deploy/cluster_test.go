package deploy_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// TestChartDryRun sends every object the chart renders, with every optional
// part on, to a real API server as a server-side dry run with strict field
// validation: the server's own schemas and validation accept them. The
// Prometheus Operator kinds are left out: the test cluster has no such CRDs
// (TestChartMonitoring checks them).
func TestChartDryRun(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	dyn := testcluster.Dynamic(t, c.AdminConfig())
	for _, ns := range []string{releaseNS, "fleet-secrets"} {
		testcluster.CreateNamespace(t, dyn, ns)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, o := range render(t, "--values", allValues) {
		if o.typed == nil {
			continue
		}
		gvk := o.u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", o, err)
			continue
		}
		_, err = dyn.Resource(m.Resource).Namespace(o.u.GetNamespace()).Create(t.Context(), o.u,
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
		if err != nil {
			t.Errorf("%s rejected by the API server: %v", o, err)
		}
	}
}

// TestMemberClusterRoleSyncs applies deploy/member-cluster/clusterrole.yaml to
// a real cluster, binds it (as the example binding does, but to test user
// carol) and runs the aggregator as carol: every default type syncs, and a
// type outside the role (secrets) is reported forbidden. Those rights and no
// others are what fleetcache needs.
//
// The aggregator authenticates and authorizes as it does by default: a
// caller's token is reviewed in the home cluster, here with the token of
// the chart's ServiceAccount bound by the chart's auth-delegator binding,
// and what the caller sees is decided by SubjectAccessReviews that carol
// creates in the member cluster. alice, who may list ConfigMaps in one
// namespace, sees exactly those: the chart's home RBAC and the member role
// are enough for both reviews.
// nsAlice and nsOther hold the ConfigMaps of TestMemberClusterRoleSyncs;
// alice may list those of nsAlice only.
const nsAlice, nsOther = "member-team-a", "member-team-b"

func TestMemberClusterRoleSyncs(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	admin, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn := testcluster.Dynamic(t, c.AdminConfig())
	for _, ns := range []string{nsAlice, nsOther} {
		testcluster.CreateNamespace(t, dyn, ns)
		for _, name := range []string{"cm-0", "cm-1"} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			if _, err := admin.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
	if err := c.Grant(t.Context(), "alice", nsAlice, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}); err != nil {
		t.Fatal(err)
	}
	reviewer := homeReviewer(t, c.AdminConfig())
	role := readClusterRole(t)
	data, err := os.ReadFile("member-cluster/clusterrolebinding-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	binding := find[*rbacv1.ClusterRoleBinding](t, decodeManifests(t, data), "ClusterRoleBinding")
	if binding.RoleRef.Name != role.Name {
		t.Fatalf("the example binding refers to ClusterRole %q, the file defines %q", binding.RoleRef.Name, role.Name)
	}
	binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
		if err := admin.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})

	// RBAC's authorizer sees new bindings after a moment; wait for it, and
	// check on the way that the role grants nothing beyond list and watch.
	access := []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Verb: "watch", Group: "apps", Resource: "deployments"}, true},
		{authorizationv1.ResourceAttributes{Verb: "list", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, true},
		{authorizationv1.ResourceAttributes{Verb: "get", Namespace: "default", Resource: "pods"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "namespaces", Name: "kube-system"}, true},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "namespaces", Name: "default"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Namespace: "default", Resource: "configmaps"}, false},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}, false},
	}
	testcluster.Eventually(t, 30*time.Second, "carol's access to follow the ClusterRole", func() (bool, string) {
		var wrong []string
		for _, a := range access {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "carol", ResourceAttributes: &a.attrs}}
			got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			if got.Status.Allowed != a.want {
				wrong = append(wrong, fmt.Sprintf("%s %s.%s allowed=%t", a.attrs.Verb, a.attrs.Resource, a.attrs.Group, got.Status.Allowed))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})

	agg, err := app.New(app.Options{
		Informers: informers.Options{
			Resources:      append(slices.Clone(informers.DefaultResources), "secrets"),
			DiscoveryRetry: 300 * time.Millisecond,
			SyncTimeout:    time.Minute,
			ProbeInterval:  time.Second,
			ProbeTimeout:   time.Second,
		},
		Auth: app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: reviewer},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := agg.Registry.Add(clusters.Cluster{Name: "c1", Config: c.UserConfig("carol")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- agg.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("aggregator: %v", err)
		}
	}()

	var status health.ClusterStatus
	testcluster.Eventually(t, time.Minute, "every default type SYNCED and secrets forbidden", func() (bool, string) {
		s, ok := agg.Health.Cluster("c1")
		if !ok {
			return false, "c1 not tracked"
		}
		status = s
		byName := map[string]health.ResourceStatus{}
		for _, r := range s.Resources {
			byName[r.Resource] = r
		}
		var pending []string
		for _, name := range informers.DefaultResources {
			if r := byName[name]; r.Status != health.Synced {
				pending = append(pending, fmt.Sprintf("%s=%s %s", name, r.Status, r.LastError))
			}
		}
		if r := byName["secrets"]; r.Status != health.Degraded || !strings.Contains(r.LastError, "forbidden") {
			pending = append(pending, fmt.Sprintf("secrets=%s %q", r.Status, r.LastError))
		}
		return len(pending) == 0, strings.Join(pending, "; ")
	})
	if status.Status != health.Degraded {
		t.Errorf("cluster status %s, want DEGRADED for the forbidden type", status.Status)
	}
	if n := agg.Index.ObjectCount("c1", "namespaces"); n == 0 {
		t.Error("no namespaces cached through the member ClusterRole")
	}
	// The role lets fleetcache read who the member is (for warm starts).
	kubeSystem, err := admin.CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := agg.Health.Cluster("c1"); s.MemberID != string(kubeSystem.UID) {
		t.Errorf("member identity read through the ClusterRole = %q, want kube-system's UID %s", s.MemberID, kubeSystem.UID)
	}

	srv := httptest.NewServer(agg.Handler)
	defer srv.Close()
	all := []string{nsAlice + "/cm-0", nsAlice + "/cm-1", nsOther + "/cm-0", nsOther + "/cm-1"}
	for _, tt := range []struct {
		user string
		want []string
	}{
		// A SubjectAccessReview that fails (carol may not create it) would
		// deny and list c1 in deniedClusters: alice would see nothing.
		{user: "alice", want: all[:2]},
		{user: "admin", want: all},
	} {
		got, denied := visibleConfigMaps(t, srv.URL, c.UserConfig(tt.user).BearerToken)
		if diff := cmp.Diff(tt.want, got); diff != "" || len(denied) > 0 {
			t.Errorf("%s sees ConfigMaps (-want +got):\n%s\ndenied clusters: %v", tt.user, diff, denied)
		}
	}
}

// homeReviewer applies the ServiceAccount and the auth-delegator binding
// the chart renders by default to the cluster of admin, and returns a
// config that acts with a token of that ServiceAccount, as the pod would.
func homeReviewer(t *testing.T, admin *rest.Config) *rest.Config {
	t.Helper()
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.CreateNamespace(t, testcluster.Dynamic(t, admin), releaseNS)
	objs := render(t)
	sa := find[*corev1.ServiceAccount](t, objs, "ServiceAccount")
	binding := find[*rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding")
	if binding.RoleRef.Name != "system:auth-delegator" {
		t.Fatalf("the chart's ClusterRoleBinding binds %q", binding.RoleRef.Name)
	}
	if _, err := client.CoreV1().ServiceAccounts(sa.Namespace).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := client.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
		if err := client.CoreV1().ServiceAccounts(sa.Namespace).Delete(ctx, sa.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	tr, err := client.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(t.Context(), sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	reviewer, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The binding reaches RBAC's authorizer after a moment.
	user := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	testcluster.Eventually(t, 30*time.Second, "the ServiceAccount to review tokens", func() (bool, string) {
		review, err := client.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return review.Status.Allowed, review.Status.Reason
	})
	// And the token itself works: the ServiceAccount reviews one.
	if _, err := reviewer.AuthenticationV1().TokenReviews().Create(t.Context(),
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the chart's ServiceAccount cannot review tokens: %v", err)
	}
	return cfg
}

// visibleConfigMaps queries the aggregator at url with token for every
// ConfigMap of the test namespaces, as namespace/name, sorted, and the
// clusters left out for want of an authorization answer.
func visibleConfigMaps(t *testing.T, url, token string) (names, denied []string) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"query": fmt.Sprintf(`{ resources(filter: {kinds: ["ConfigMap"], namespaces: [%q, %q]}, first: 1000) {
		totalCount deniedClusters edges { node { namespace name } } } }`, nsAlice, nsOther)})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Resources struct {
				TotalCount     int
				DeniedClusters []string
				Edges          []struct {
					Node struct{ Namespace, Name string }
				}
			}
		}
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("status %s, errors %+v", resp.Status, r.Errors)
	}
	for _, e := range r.Data.Resources.Edges {
		names = append(names, e.Node.Namespace+"/"+e.Node.Name)
	}
	slices.Sort(names)
	if r.Data.Resources.TotalCount != len(names) {
		t.Errorf("totalCount %d, %d edges", r.Data.Resources.TotalCount, len(names))
	}
	return names, r.Data.Resources.DeniedClusters
}

// TestChartProbesWithTLS runs the aggregator with the config file the chart
// renders for TLS and sends it the rendered probes as the kubelet would: they
// pass over HTTPS once the cluster has synced, and the same probes over plain
// HTTP, which the chart rendered before it knew TLS, fail.
func TestChartProbesWithTLS(t *testing.T) {
	env := testbed.Env(t)
	objs := render(t, "--set", "serving.tls.secretName=fleetcache-tls", "--set", "clusterSecrets.enabled=false")
	cfg := loadConfig(t, find[*corev1.ConfigMap](t, objs, "ConfigMap"))
	// Replace what exists only in the pod: the certificate (a fresh pair,
	// trusted here), the in-cluster reviewer and the cluster source.
	var roots *x509.CertPool
	cfg.Serving.TLSCertFile, cfg.Serving.TLSPrivateKeyFile, roots = writeServingCert(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		t.Fatal(err)
	}
	cfg.Kubeconfigs = []string{kubeconfig}
	cfg.Resources = []string{"namespaces"}
	opts := cfg.Options()
	opts.Auth.AuthnConfig = env.Cluster("c1").AdminConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr = ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if opts.TLSCertFile == "" {
		t.Fatal("the rendered config does not serve TLS")
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, opts) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	probe := func(p *corev1.Probe, scheme corev1.URIScheme) (int, error) {
		if p.HTTPGet.Port.String() != "http" {
			return 0, fmt.Errorf("probe port %s, not the container port http", p.HTTPGet.Port.String())
		}
		u := strings.ToLower(string(scheme)) + "://" + opts.Addr + p.HTTPGet.Path
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	c := find[*appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Containers[0]
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"liveness", c.LivenessProbe}, {"readiness", c.ReadinessProbe}} {
		testcluster.Eventually(t, time.Minute, p.name+" probe to pass over "+string(p.probe.HTTPGet.Scheme), func() (bool, string) {
			code, err := probe(p.probe, p.probe.HTTPGet.Scheme)
			return err == nil && code == http.StatusOK, fmt.Sprint(code, err)
		})
		// The kubelet counts any status outside 200–399 as a failure.
		if code, err := probe(p.probe, corev1.URISchemeHTTP); err == nil && code < 400 {
			t.Errorf("%s probe over plain HTTP answered %d: TLS is not on", p.name, code)
		}
	}
}

// TestChartInventoryRBAC applies the chart's inventory roles to a real
// cluster and asks its authorizer what the pod's ServiceAccount may do:
// read ClusterProfiles everywhere and Secrets in the Cluster API and Argo CD
// namespaces, and no other Secret.
func TestChartInventoryRBAC(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	client := kubernetes.NewForConfigOrDie(c.AdminConfig())
	dyn := testcluster.Dynamic(t, c.AdminConfig())
	for _, ns := range []string{releaseNS, "argocd", "capi-clusters"} {
		testcluster.CreateNamespace(t, dyn, ns)
	}
	var sa string
	for _, o := range render(t, "--values", inventoryValues) {
		var err error
		switch r := o.typed.(type) {
		case *rbacv1.Role:
			_, err = client.RbacV1().Roles(r.Namespace).Create(t.Context(), r, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = client.RbacV1().RoleBindings(r.Namespace).Create(t.Context(), r, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = client.RbacV1().ClusterRoles().Create(t.Context(), r, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			if strings.Contains(r.Name, "inventory") {
				_, err = client.RbacV1().ClusterRoleBindings().Create(t.Context(), r, metav1.CreateOptions{})
			}
		case *corev1.ServiceAccount:
			sa = "system:serviceaccount:" + r.Namespace + ":" + r.Name
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", o, err)
		}
	}
	allowed := func(verb, group, resource, ns string) (bool, string) {
		r, err := client.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, Groups: []string{"system:serviceaccounts"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return r.Status.Allowed, r.Status.Reason
	}
	for _, tt := range []struct {
		verb, group, resource, ns string
		want                      bool
	}{
		{"watch", "multicluster.x-k8s.io", "clusterprofiles", "", true},
		{"list", "multicluster.x-k8s.io", "clusterprofiles", "open-cluster-management", true},
		{"list", "", "secrets", "argocd", true},
		{"watch", "", "secrets", "capi-clusters", true},
		{"list", "", "secrets", "default", false},
		{"list", "", "secrets", "", false},
		{"update", "", "secrets", "argocd", false},
		{"update", "multicluster.x-k8s.io", "clusterprofiles", "open-cluster-management", false},
	} {
		name := fmt.Sprintf("%s %s.%s in %q", tt.verb, tt.resource, tt.group, tt.ns)
		testcluster.Eventually(t, 30*time.Second, name, func() (bool, string) {
			ok, why := allowed(tt.verb, tt.group, tt.resource, tt.ns)
			return ok == tt.want, fmt.Sprintf("allowed %v, want %v: %s", ok, tt.want, why)
		})
	}
}
