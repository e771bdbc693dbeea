package kubeapi_test

import (
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// TestAuthorization: a caller limited to one namespace in one member reads
// there through fleetcache as from the member, and is refused elsewhere with
// the member's own Forbidden message, for the verb asked.
func TestAuthorization(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	ctx := t.Context()
	for _, ns := range []string{"team-a", "team-b", "other"} {
		if _, err := f.kubectl(t, "--context", "c1", "create", "namespace", ns); err != nil {
			t.Fatal(err)
		}
		if _, err := f.kubectl(t, "--context", "c1", "create", "configmap", "cm", "-n", ns, "--from-literal=a=1"); err != nil {
			t.Fatal(err)
		}
	}
	// alice reads ConfigMaps in team-a of c1, and may get and list but not
	// watch them in team-b; nothing in c2.
	c1 := f.env.Cluster("c1")
	if err := c1.Grant(ctx, "alice", "team-a", rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}); err != nil {
		t.Fatal(err)
	}
	if err := c1.Grant(ctx, "alice", "team-b", rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}); err != nil {
		t.Fatal(err)
	}
	alice := f.as(t, "alice")
	testcluster.Eventually(t, 30*time.Second, "the ConfigMaps cached", func() (bool, string) {
		out, err := f.kubectl(t, "--context", "fleet-c1", "get", "cm", "cm", "-n", "other")
		return err == nil, out
	})

	for _, tt := range []struct {
		name    string
		args    []string
		allowed bool
	}{
		{"list in its namespace", []string{"get", "cm", "-n", "team-a"}, true},
		{"get in its namespace", []string{"get", "cm", "cm", "-n", "team-a", "-o", "yaml"}, true},
		{"list elsewhere", []string{"get", "cm", "-n", "other"}, false},
		{"get elsewhere", []string{"get", "cm", "cm", "-n", "other"}, false},
		{"list everywhere", []string{"get", "cm", "-A"}, false},
		{"another type", []string{"get", "pods", "-n", "team-a"}, false},
		{"list without watch", []string{"get", "cm", "-n", "team-b"}, true},
		{"watch without the right", []string{"get", "cm", "-n", "team-b", "-w", "--request-timeout=10s"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) { alice.sameAsMember(t, "c1", tt.args, tt.allowed, false) })
	}
	t.Run("other member", func(t *testing.T) {
		_, err := alice.kubectl(t, "--context", "fleet-c2", "get", "cm", "-n", "team-a")
		if err == nil || !strings.Contains(err.Error(), `Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team-a"`) {
			t.Errorf("c2 through fleetcache: %v", err)
		}
	})
}

// forbidden returns the line of kubectl's error output that says what is
// forbidden.
func forbidden(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if i := strings.Index(line, "Error from server (Forbidden)"); i >= 0 {
			return line[i:]
		}
	}
	return ""
}

// sameAsMember runs kubectl with args against the member cluster and
// through fleetcache (context fleet-<cluster>) and checks that both answer
// alike: the same output, AGE aside, when allowed, the same Forbidden line
// when not. endsByTimeout says both end with an error that is not a
// refusal (a watch's --request-timeout).
func (f *fleet) sameAsMember(t *testing.T, cluster string, args []string, allowed, endsByTimeout bool) {
	t.Helper()
	want, wantErr := f.kubectl(t, append([]string{"--context", cluster}, args...)...)
	got, gotErr := f.kubectl(t, append([]string{"--context", "fleet-" + cluster}, args...)...)
	if endsByTimeout {
		wantErr, gotErr = nil, nil
	}
	if (wantErr == nil) != allowed {
		t.Fatalf("the member answered %q, %v: the test's rights are not what it expects", want, wantErr)
	}
	if allowed {
		if gotErr != nil || withoutAge(got) != withoutAge(want) {
			t.Errorf("through fleetcache: %q, %v\nfrom the member: %q", got, gotErr, want)
		}
		return
	}
	if gotErr == nil {
		t.Fatalf("allowed through fleetcache: %q", got)
	}
	if w, g := forbidden(wantErr.Error()), forbidden(gotErr.Error()); w == "" || w != g {
		t.Errorf("through fleetcache: %s\nfrom the member: %s", g, w)
	}
}
