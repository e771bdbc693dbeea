package aggregator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/aggregator"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// authFixture is an aggregator with authentication by c1 and authorization
// by each member cluster, over three clusters seeded with ConfigMaps and
// Pods in two namespaces.
type authFixture struct {
	addr string
	kube map[string]kubernetes.Interface
	// top is the test that started the fixture.
	top *testing.T
}

const (
	nsA = "auth-team-a"
	nsB = "auth-team-b"
)

func startAuthFixture(t *testing.T) *authFixture {
	t.Helper()
	return startAuthFixtureWith(t, nil)
}

// startAuthFixtureWith is startAuthFixture with edit applied to the
// aggregator's AuthOptions.
func startAuthFixtureWith(t *testing.T, edit func(*aggregator.AuthOptions)) *authFixture {
	t.Helper()
	f := &authFixture{kube: map[string]kubernetes.Interface{}, top: t}
	ctx := t.Context()
	for _, c := range env.Clusters() {
		kube := kubernetes.NewForConfigOrDie(c.AdminConfig())
		f.kube[c.Name()] = kube
		for _, ns := range []string{nsA, nsB} {
			// Both tests of this file seed the same objects.
			if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				f.configMap(t, c.Name(), ns, fmt.Sprintf("cm-%d", i), nil)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-0"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}}}
			if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// alice may list ConfigMaps in team-a of c1 and c2; bob Pods everywhere in c3.
	cms := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	pods := rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, c := range []string{"c1", "c2"} {
		if err := env.Cluster(c).Grant(ctx, "alice", nsA, cms); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Cluster("c3").Grant(ctx, "bob", "", pods); err != nil {
		t.Fatal(err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "members")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		t.Fatal(err)
	}
	auth := aggregator.AuthOptions{
		Authn:         aggregator.AuthnTokenReview,
		AuthnConfig:   env.Cluster("c1").AdminConfig(),
		AuthzCacheTTL: time.Second, // revocation shows within it
	}
	if edit != nil {
		edit(&auth)
	}
	f.addr = startRun(t, aggregator.Options{
		Kubeconfigs: []string{kubeconfig},
		Informers:   informers.Options{Resources: []string{"namespaces", "configmaps", "pods"}},
		Auth:        auth,
	})
	for _, c := range []string{"c1", "c2", "c3"} {
		testcluster.Eventually(t, 60*time.Second, "clusters synced", func() (bool, string) {
			var d struct{ Cluster struct{ Status string } }
			err := f.query("carol", fmt.Sprintf(`{ cluster(name: %q) { status } }`, c), &d)
			return err == nil && d.Cluster.Status == "SYNCED", fmt.Sprint(d, err)
		})
	}
	return f
}

func (f *authFixture) configMap(t *testing.T, cluster, ns, name string, owner *metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	out, err := f.kube[cluster].CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tempConfigMap is configMap, deleted when the fixture's test ends (not a
// subtest), so that the test finds the seeded objects only when it runs
// again (-count).
func (f *authFixture) tempConfigMap(t *testing.T, cluster, ns, name string, owner *metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm := f.configMap(t, cluster, ns, name, owner)
	f.top.Cleanup(func() {
		if err := f.kube[cluster].CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			f.top.Errorf("delete ConfigMap %s/%s of %s: %v", ns, name, cluster, err)
		}
	})
	return cm
}

func token(user string) string { return env.Cluster("c1").UserConfig(user).BearerToken }

// post sends a query with a bearer token ("" for none) and returns the
// status and the decoded body.
func (f *authFixture) post(tok, query string) (int, graphQLResponse, error) {
	body, _ := json.Marshal(map[string]string{"query": query})
	req, _ := http.NewRequest(http.MethodPost, "http://"+f.addr+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, graphQLResponse{}, err
	}
	defer resp.Body.Close()
	var r graphQLResponse
	err = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r, err
}

type graphQLResponse struct {
	Data   json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

// query runs a query as user and decodes its data into out.
func (f *authFixture) query(user, query string, out any) error {
	status, r, err := f.post(token(user), query)
	if err != nil {
		return err
	}
	if status != http.StatusOK || len(r.Errors) > 0 {
		return fmt.Errorf("status %d, errors %+v", status, r.Errors)
	}
	return json.Unmarshal(r.Data, out)
}

// visible returns what user sees of the ConfigMaps and Pods of the two
// namespaces, as cluster/namespace/kind/name, with the total count.
func (f *authFixture) visible(t *testing.T, user string) ([]string, int, []string) {
	t.Helper()
	var d struct {
		Resources struct {
			TotalCount     int
			DeniedClusters []string
			Edges          []struct {
				Node struct{ Cluster, Namespace, Kind, Name string }
			}
		}
	}
	q := fmt.Sprintf(`{ resources(filter: {namespaces: [%q, %q], kinds: ["ConfigMap", "Pod"]}, first: 1000) { totalCount deniedClusters edges { node { cluster namespace kind name } } } }`, nsA, nsB)
	if err := f.query(user, q, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range d.Resources.Edges {
		n := e.Node
		out = append(out, n.Cluster+"/"+n.Namespace+"/"+n.Kind+"/"+n.Name)
	}
	return out, d.Resources.TotalCount, d.Resources.DeniedClusters
}

func TestAuthorization(t *testing.T) {
	f := startAuthFixture(t)
	parent := f.tempConfigMap(t, "c1", nsA, "parent", nil)
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: parent.Name, UID: parent.UID}
	f.tempConfigMap(t, "c1", nsA, "child", owner)
	if _, err := f.kube["c1"].CoreV1().Pods(nsA).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "owned-pod", OwnerReferences: []metav1.OwnerReference{*owner}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.kube["c1"].CoreV1().Pods(nsA).Delete(context.Background(), "owned-pod", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete the owned Pod: %v", err)
		}
	})
	testcluster.Eventually(t, 30*time.Second, "the owned objects to be cached", func() (bool, string) {
		all, _, _ := f.visible(t, "admin")
		return slices.Contains(all, "c1/"+nsA+"/Pod/owned-pod") && slices.Contains(all, "c1/"+nsA+"/ConfigMap/child"), fmt.Sprint(all)
	})

	t.Run("alice", func(t *testing.T) {
		got, total, denied := f.visible(t, "alice")
		want := []string{
			"c1/" + nsA + "/ConfigMap/child", "c1/" + nsA + "/ConfigMap/cm-0", "c1/" + nsA + "/ConfigMap/cm-1", "c1/" + nsA + "/ConfigMap/parent",
			"c2/" + nsA + "/ConfigMap/cm-0", "c2/" + nsA + "/ConfigMap/cm-1",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("alice sees (-want +got):\n%s", diff)
		}
		if total != len(want) || len(denied) != 0 {
			t.Errorf("totalCount %d, deniedClusters %v; want %d, none", total, denied, len(want))
		}
		var d struct {
			ByCluster, ByKind, ByNamespace []struct {
				Value string
				Count int
			}
			Hidden, Shown *struct{ Name string }
			Parent        struct {
				Children []struct{ Kind, Name string }
			}
		}
		q := fmt.Sprintf(`{
		  byCluster: facets(by: CLUSTER) { value count }
		  byKind: facets(by: KIND) { value count }
		  byNamespace: facets(by: NAMESPACE) { value count }
		  hidden: resource(cluster: "c1", kind: "ConfigMap", namespace: %q, name: "cm-0") { name }
		  shown: resource(cluster: "c1", kind: "ConfigMap", namespace: %q, name: "cm-0") { name }
		  parent: resource(cluster: "c1", kind: "ConfigMap", namespace: %q, name: "parent") { children { kind name } }
		}`, nsB, nsA, nsA)
		if err := f.query("alice", q, &d); err != nil {
			t.Fatal(err)
		}
		type facet = struct {
			Value string
			Count int
		}
		if diff := cmp.Diff([]facet{{"c1", 4}, {"c2", 2}}, d.ByCluster); diff != "" {
			t.Errorf("facets by cluster (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]facet{{"ConfigMap", 6}}, d.ByKind); diff != "" {
			t.Errorf("facets by kind (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]facet{{nsA, 6}}, d.ByNamespace); diff != "" {
			t.Errorf("facets by namespace (-want +got):\n%s", diff)
		}
		if d.Hidden != nil || d.Shown == nil {
			t.Errorf("resource in team-b = %v (want null), in team-a = %v (want it)", d.Hidden, d.Shown)
		}
		if diff := cmp.Diff([]struct{ Kind, Name string }{{"ConfigMap", "child"}}, d.Parent.Children); diff != "" {
			t.Errorf("children of parent (-want +got; the owned Pod is hidden):\n%s", diff)
		}
	})

	t.Run("bob", func(t *testing.T) {
		got, total, _ := f.visible(t, "bob")
		want := []string{"c3/" + nsA + "/Pod/pod-0", "c3/" + nsB + "/Pod/pod-0"}
		if diff := cmp.Diff(want, got); diff != "" || total != 2 {
			t.Errorf("bob sees %d (-want +got):\n%s", total, diff)
		}
	})

	t.Run("cluster messages", func(t *testing.T) {
		var d struct {
			Clusters []struct {
				Name      string
				Resources []struct{ Resource string }
			}
		}
		if err := f.query("alice", `{ clusters { name resources { resource } } }`, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Clusters) != 3 {
			t.Errorf("alice sees %d clusters' health, want all 3", len(d.Clusters))
		}
	})

	events := wsSubscribe(t, f.addr, token("alice"), `subscription { resourceEvents(filter: {kinds: ["ConfigMap"]}) { type resource { cluster namespace name } } }`)
	t.Run("events", func(t *testing.T) {
		f.tempConfigMap(t, "c1", nsB, "hidden-1", nil)
		f.tempConfigMap(t, "c3", nsA, "hidden-2", nil)
		f.tempConfigMap(t, "c2", nsA, "shown-1", nil)
		f.tempConfigMap(t, "c1", nsA, "shown-2", nil)
		// Changes in two clusters reach the index through two watches: in
		// either order.
		got := []string{events(), events()}
		slices.Sort(got)
		want := []string{"ADDED c1/" + nsA + "/shown-2", "ADDED c2/" + nsA + "/shown-1"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("alice's events (-want +got; nothing of other namespaces or clusters):\n%s", diff)
		}
	})

	t.Run("revocation", func(t *testing.T) {
		if err := deleteBindings(t.Context(), f.kube["c2"], nsA, "alice"); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "alice's c2 objects to go within the TTL", func() (bool, string) {
			got, _, _ := f.visible(t, "alice")
			for _, o := range got {
				if strings.HasPrefix(o, "c2/") {
					return false, fmt.Sprint(got)
				}
			}
			return len(got) == 5, fmt.Sprint(got)
		})
		f.tempConfigMap(t, "c2", nsA, "after-revocation", nil)
		f.tempConfigMap(t, "c1", nsA, "still-shown", nil)
		if got, want := events(), "ADDED c1/"+nsA+"/still-shown"; got != want {
			t.Errorf("alice's event after revocation %q, want %q", got, want)
		}
	})
}

// wsSubscribe subscribes over a WebSocket as the owner of tok and returns a
// function that reads the next event as "TYPE cluster/namespace/name".
func wsSubscribe(t *testing.T, addr, tok, query string) func() string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	sub, _ := json.Marshal(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]string{"query": query}})
	for _, msg := range []string{fmt.Sprintf(`{"type":"connection_init","payload":{"authorization":"Bearer %s"}}`, tok), string(sub)} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	return func() string {
		t.Helper()
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read event: %v", err)
			}
			var m struct {
				Type    string
				Payload struct {
					Data *struct {
						ResourceEvents struct {
							Type     string
							Resource struct{ Cluster, Namespace, Name string }
						}
					}
					Errors []any
				}
			}
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			switch {
			case m.Type == "next" && m.Payload.Data != nil:
				e := m.Payload.Data.ResourceEvents
				return e.Type + " " + e.Resource.Cluster + "/" + e.Resource.Namespace + "/" + e.Resource.Name
			case m.Type == "error" || len(m.Payload.Errors) > 0:
				t.Fatalf("subscription failed: %s", data)
			}
			// connection_ack, pings, heartbeats
		}
	}
}

// TestAuthorizationUnreachableMember stops a member cluster: its access
// reviews fail, so its objects are hidden and the answer says so.
func TestAuthorizationUnreachableMember(t *testing.T) {
	f := startAuthFixture(t)
	if got, _, _ := f.visible(t, "bob"); len(got) != 2 {
		t.Fatalf("bob sees %v before the outage, want his two Pods", got)
	}
	c3 := env.Cluster("c3")
	if err := c3.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c3.Restart(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("restart c3: %v", err)
		}
	})
	testcluster.Eventually(t, 30*time.Second, "c3 denied once its decisions expire", func() (bool, string) {
		got, total, denied := f.visible(t, "bob")
		return len(got) == 0 && total == 0 && slices.Equal(denied, []string{"c3"}), fmt.Sprint(got, total, denied)
	})
	var d struct{ Resource *struct{ Name string } }
	status, r, err := f.post(token("bob"), fmt.Sprintf(`{ resource(cluster: "c3", kind: "Pod", namespace: %q, name: "pod-0") { name } }`, nsA))
	if err != nil || status != http.StatusOK {
		t.Fatalf("resource query: %d %v", status, err)
	}
	_ = json.Unmarshal(r.Data, &d)
	if d.Resource != nil || len(r.Errors) != 1 || r.Errors[0].Extensions.Code != "ACCESS_REVIEW_FAILED" {
		t.Errorf("resource of an unreachable member: %+v %+v, want null and ACCESS_REVIEW_FAILED", d.Resource, r.Errors)
	}
}

// TestAuthorizationPolicy decides by the rules of the configuration, not by
// the member clusters: alice gets what the rules give, whatever her RBAC.
func TestAuthorizationPolicy(t *testing.T) {
	f := startAuthFixtureWith(t, func(a *aggregator.AuthOptions) {
		a.Authz = aggregator.AuthzPolicy
		a.PolicyRules = []authz.Rule{
			{Users: []string{"alice"}, Clusters: []string{"c3"}, Namespaces: []string{nsB}, Resources: []string{"pods"}},
			{Groups: []string{"system:masters"}},
		}
	})
	got, total, _ := f.visible(t, "alice")
	if want := []string{"c3/" + nsB + "/Pod/pod-0"}; !slices.Equal(got, want) || total != 1 {
		t.Errorf("alice sees %v (%d), want %v: the policy, not her RBAC", got, total, want)
	}
	if got, _, _ := f.visible(t, "bob"); len(got) != 0 {
		t.Errorf("bob, in no rule, sees %v", got)
	}
	if got, _, _ := f.visible(t, "admin"); len(got) < 12 {
		t.Errorf("admin (group system:masters) sees %d objects, want all of them", len(got))
	}
}

// deleteBindings deletes the RoleBindings of namespace that name user.
func deleteBindings(ctx context.Context, kube kubernetes.Interface, namespace, user string) error {
	list, err := kube.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, b := range list.Items {
		for _, s := range b.Subjects {
			if s.Name == user {
				if err := kube.RbacV1().RoleBindings(namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func TestAuthentication(t *testing.T) {
	f := startAuthFixture(t)

	// An "expired" token: a ServiceAccount token bound to a Secret, which is
	// deleted. The API server rejects it from then on.
	kube := f.kube["c1"]
	ctx := t.Context()
	if _, err := kube.CoreV1().ServiceAccounts(nsA).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "portal"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound, err := kube.CoreV1().Secrets(nsA).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "portal-session"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(nsA).CreateToken(ctx, "portal", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: bound.Name, UID: bound.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, err := f.post(tr.Status.Token, `{ clusters { name } }`); err != nil || status != http.StatusOK {
		t.Fatalf("the bound token before its Secret is deleted: %d %v", status, err)
	}
	if err := kube.CoreV1().Secrets(nsA).Delete(ctx, bound.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct{ name, token string }{
		{"no token", ""},
		{"wrong token", "not-a-token"},
		{"expired token", tr.Status.Token},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testcluster.Eventually(t, 15*time.Second, "401", func() (bool, string) {
				status, r, err := f.post(tt.token, `{ resources { totalCount edges { node { name } } } }`)
				ok := err == nil && status == http.StatusUnauthorized && len(r.Errors) == 1 &&
					r.Errors[0].Extensions.Code == "UNAUTHENTICATED" && (len(r.Data) == 0 || string(r.Data) == "null")
				return ok, fmt.Sprintf("%d %s %+v %v", status, r.Data, r.Errors, err)
			})
			code := wsInit(t, f.addr, tt.token)
			if code != 4403 {
				t.Errorf("WebSocket init: close %d, want 4403", code)
			}
		})
	}
	t.Run("token in connection_init", func(t *testing.T) {
		if code := wsInit(t, f.addr, token("alice")); code != 0 {
			t.Errorf("WebSocket init with alice's token: close %d, want connection_ack", code)
		}
	})
}

// wsInit opens a WebSocket, sends connection_init with the token in its
// payload, and returns the close code, or 0 if the server acknowledged it.
func wsInit(t *testing.T, addr, tok string) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	init := `{"type":"connection_init"}`
	if tok != "" {
		init = fmt.Sprintf(`{"type":"connection_init","payload":{"authorization":"Bearer %s"}}`, tok)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(init)); err != nil {
		t.Fatal(err)
	}
	_, data, err := c.Read(ctx)
	if err != nil {
		return websocket.CloseStatus(err)
	}
	if !strings.Contains(string(data), "connection_ack") {
		t.Errorf("unexpected message %s", data)
	}
	return 0
}
