package deploy_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/aggregator"
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
func TestMemberClusterRoleSyncs(t *testing.T) {
	c := env.Cluster("c1")
	admin, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
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
		{authorizationv1.ResourceAttributes{Verb: "create", Namespace: "default", Resource: "configmaps"}, false},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}, false},
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

	agg, err := aggregator.New(aggregator.Options{Informers: informers.Options{
		Resources:      append(slices.Clone(informers.DefaultResources), "secrets"),
		DiscoveryRetry: 300 * time.Millisecond,
		SyncTimeout:    time.Minute,
		ProbeInterval:  time.Second,
		ProbeTimeout:   time.Second,
	}})
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
}
