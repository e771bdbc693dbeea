package kubeapi_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/audit"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

// TestImpersonation: kubectl --as, --as-group and --as-uid through
// fleetcache answer what they answer against the member: alice, who may
// impersonate bob (his group devs, his UID) in c1, the cluster that reviews
// tokens, reads what bob may read; impersonating anyone else, or carol, who
// may impersonate nobody, is the member's own Forbidden message. Extras
// (client-go's Impersonate.Extra) likewise. On /fleet, bob's rights decide
// which clusters answer. The audit log has a line per request with both
// users, what was read and the decision.
func TestImpersonation(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	f := startFleetWith(t, app.Options{KubeAPI: kubeapiOptions(), Audit: audit.Options{Path: auditPath}})
	ctx := t.Context()
	for _, ns := range []string{"imp-a", "imp-b"} {
		if _, err := f.kubectl(t, "--context", "c1", "create", "namespace", ns); err != nil {
			t.Fatal(err)
		}
		if _, err := f.kubectl(t, "--context", "c1", "create", "configmap", "cm", "-n", ns, "--from-literal=a=1"); err != nil {
			t.Fatal(err)
		}
	}
	c1 := f.env.Cluster("c1")
	impersonate := func(group, resource, name string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}}
	}
	if err := c1.Grant(ctx, "alice", "", impersonate("", "users", "bob"), impersonate("", "groups", "devs"),
		impersonate("authentication.k8s.io", "uids", "bob-uid"), impersonate("authentication.k8s.io", "userextras/scopes", "view")); err != nil {
		t.Fatal(err)
	}
	if err := c1.Grant(ctx, "bob", "imp-a", rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the ConfigMaps cached", func() (bool, string) {
		out, err := f.kubectl(t, "--context", "fleet-c1", "get", "cm", "cm", "-n", "imp-b")
		return err == nil, out
	})
	alice, carol := f.as(t, "alice"), f.as(t, "carol")

	for _, tt := range []struct {
		name    string
		as      *fleet
		args    []string
		allowed bool
	}{
		{"as bob", alice, []string{"--as", "bob", "get", "cm", "-n", "imp-a"}, true},
		{"as bob, his group and UID", alice, []string{"--as", "bob", "--as-group", "devs", "--as-uid", "bob-uid", "get", "cm", "cm", "-n", "imp-a", "-o", "yaml"}, true},
		{"as bob, where bob may not read", alice, []string{"--as", "bob", "get", "cm", "-n", "imp-b"}, false},
		{"as bob, a watch", alice, []string{"--as", "bob", "get", "cm", "-n", "imp-a", "-w", "--request-timeout=2s"}, true},
		{"as another user", alice, []string{"--as", "carol", "get", "cm", "-n", "imp-a"}, false},
		{"as another group", alice, []string{"--as", "bob", "--as-group", "system:masters", "get", "cm", "-n", "imp-a"}, false},
		{"as another UID", alice, []string{"--as", "bob", "--as-uid", "alice-uid", "get", "cm", "-n", "imp-a"}, false},
		{"a caller without rights", carol, []string{"--as", "bob", "get", "cm", "-n", "imp-a"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.as.sameAsMember(t, "c1", tt.args, tt.allowed, tt.name == "as bob, a watch") })
	}

	t.Run("extras", func(t *testing.T) {
		for _, tt := range []struct {
			scope   string
			allowed bool
		}{{"view", true}, {"admin", false}} {
			imp := rest.ImpersonationConfig{UserName: "bob", Extra: map[string][]string{"scopes": {tt.scope}}}
			member, through := c1.UserConfig("alice"), f.restConfig("c1")
			through.BearerToken = member.BearerToken
			member.Impersonate, through.Impersonate = imp, imp
			var errs [2]error
			var names [2]string
			for i, cfg := range []*rest.Config{member, through} {
				list, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("imp-a").List(ctx, metav1.ListOptions{})
				errs[i] = err
				if err == nil {
					for _, cm := range list.Items {
						names[i] += cm.Name + " "
					}
				}
			}
			if (errs[0] == nil) != tt.allowed || names[0] != names[1] || fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
				t.Errorf("scopes=%s: from the member %q, %v; through fleetcache %q, %v", tt.scope, names[0], errs[0], names[1], errs[1])
			}
		}
	})

	t.Run("fleet", func(t *testing.T) {
		out, stderr, err := alice.kubectlStderr(t, "--context", "fleet", "--as", "bob", "get", "cm", "-n", "imp-a")
		if err != nil || !strings.Contains(out, "c1") || strings.Contains(out, "c2 ") || !strings.Contains(stderr, "cluster c2 left out: forbidden") {
			t.Errorf("alice as bob on /fleet: %q %q %v; want c1's ConfigMap, c2 left out", out, stderr, err)
		}
	})

	t.Run("audit", func(t *testing.T) {
		type line struct {
			Stage, Verb, RequestURI string
			User                    struct{ Username string }
			ImpersonatedUser        *struct {
				Username string
				UID      string
				Groups   []string
			}
			ObjectRef      *audit.ObjectRef
			ResponseStatus *struct{ Code int }
			Annotations    map[string]string
		}
		var lines []line
		var raw []byte
		find := func(match func(line) bool) (line, bool) {
			for _, l := range lines {
				if match(l) {
					return l, true
				}
			}
			return line{}, false
		}
		getAsBob := func(l line) bool {
			return l.Verb == "get" && l.User.Username == "alice" && l.ImpersonatedUser != nil && l.ImpersonatedUser.Username == "bob" &&
				l.ImpersonatedUser.UID == "bob-uid" && strings.HasPrefix(l.RequestURI, kubeapi.PathPrefix+"c1/api/v1/namespaces/imp-a/configmaps/cm")
		}
		refused := func(l line) bool {
			return l.User.Username == "carol" && l.ResponseStatus != nil && l.ResponseStatus.Code == 403 &&
				l.Annotations[audit.AnnotationDecision] == "forbid" && l.ImpersonatedUser == nil
		}
		deniedByMember := func(l line) bool {
			return l.ImpersonatedUser != nil && l.ResponseStatus != nil && l.ResponseStatus.Code == 403 &&
				l.Annotations[audit.AnnotationDenied] == "c1" && strings.Contains(l.Annotations[audit.AnnotationReason], `User "bob" cannot list resource "configmaps"`)
		}
		watchStarted := func(l line) bool {
			return l.Verb == "watch" && l.Stage == audit.StageResponseStarted && l.ImpersonatedUser != nil
		}
		fleetList := func(l line) bool {
			return strings.HasPrefix(l.RequestURI, kubeapi.FleetPrefix) && l.Verb == "list" && l.Annotations[audit.AnnotationDenied] == "c2" &&
				l.Annotations[audit.AnnotationClusters] == "c1"
		}
		testcluster.Eventually(t, 10*time.Second, "the audit lines", func() (bool, string) {
			var err error
			if raw, err = os.ReadFile(auditPath); err != nil {
				return false, err.Error()
			}
			lines = nil
			for _, s := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				var l line
				if err := json.Unmarshal([]byte(s), &l); err != nil {
					return false, err.Error()
				}
				lines = append(lines, l)
			}
			var found []bool
			for _, m := range []func(line) bool{getAsBob, refused, deniedByMember, watchStarted, fleetList} {
				_, ok := find(m)
				found = append(found, ok)
			}
			return !strings.Contains(fmt.Sprint(found), "false"), fmt.Sprint(found)
		})
		l, _ := find(getAsBob)
		want := audit.ObjectRef{Resource: "configmaps", Namespace: "imp-a", Name: "cm", APIVersion: "v1"}
		if l.ObjectRef == nil || *l.ObjectRef != want || l.Annotations[audit.AnnotationClusters] != "c1" ||
			l.Annotations[audit.AnnotationDecision] != "allow" || l.ResponseStatus == nil || l.ResponseStatus.Code != 200 {
			t.Errorf("bob's get: %+v", l)
		}
		for _, u := range []string{"alice", "carol", "admin"} {
			if strings.Contains(string(raw), c1.UserConfig(u).BearerToken) {
				t.Errorf("the token of %s is in the audit log", u)
			}
		}
	})
}
