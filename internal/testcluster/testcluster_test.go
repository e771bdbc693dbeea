package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// newClient returns a clientset for cfg or fails the test.
func newClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return client
}

// ensureNamespace creates namespace ns unless it exists.
func ensureNamespace(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// uniqueName returns prefix plus a random suffix, so that the tests can run
// again (-count) against the same clusters.
func uniqueName(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(b)
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func TestClusters(t *testing.T) {
	env := testbed.Env(t)
	var names []string
	for _, c := range env.Clusters() {
		names = append(names, c.Name())
		if env.Cluster(c.Name()) != c {
			t.Errorf("Cluster(%q) is not the cluster of that name", c.Name())
		}
		if !strings.HasPrefix(c.URL(), "https://127.0.0.1:") {
			t.Errorf("cluster %s: URL %q, want https://127.0.0.1:PORT", c.Name(), c.URL())
		}
		if c.AdminConfig().Timeout != 0 {
			t.Errorf("cluster %s: AdminConfig sets Timeout, which cuts watches", c.Name())
		}
	}
	if diff := cmp.Diff([]string{"c1", "c2"}, names); diff != "" {
		t.Errorf("cluster names (-want +got):\n%s", diff)
	}
	if env.Cluster("c3") != nil {
		t.Errorf("Cluster(c3) = non-nil, want nil")
	}
}

func TestPrefixIsolation(t *testing.T) {
	env := testbed.Env(t)
	const name = "shared-name"
	ns := uniqueName(t, "isolation")
	for _, c := range env.Clusters() {
		client := newClient(t, c.AdminConfig())
		ensureNamespace(t, client, ns)
		cm := configMap(ns, name, map[string]string{"cluster": c.Name()})
		if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("cluster %s: create config map: %v", c.Name(), err)
		}
	}
	for _, c := range env.Clusters() {
		got, err := newClient(t, c.AdminConfig()).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster %s: get config map: %v", c.Name(), err)
		}
		if diff := cmp.Diff(map[string]string{"cluster": c.Name()}, got.Data); diff != "" {
			t.Errorf("cluster %s: data (-want +got):\n%s", c.Name(), diff)
		}
	}

	// Deleting in c1 leaves c2's object alone.
	c1, c2 := newClient(t, env.Cluster("c1").AdminConfig()), newClient(t, env.Cluster("c2").AdminConfig())
	if err := c1.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("c1: delete config map: %v", err)
	}
	if _, err := c2.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Errorf("c2: get config map after deleting it in c1: %v", err)
	}
}

func TestUserIdentity(t *testing.T) {
	env := testbed.Env(t)
	c := env.Cluster("c1")
	tests := []struct {
		name       string
		cfg        *rest.Config
		wantUser   string
		wantMaster bool
	}{
		{name: "admin", cfg: c.AdminConfig(), wantUser: "admin", wantMaster: true},
		{name: "alice", cfg: c.UserConfig("alice"), wantUser: "alice"},
		{name: "bob", cfg: c.UserConfig("bob"), wantUser: "bob"},
		{name: "carol", cfg: c.UserConfig("carol"), wantUser: "carol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review, err := newClient(t, tt.cfg).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("self subject review: %v", err)
			}
			info := review.Status.UserInfo
			if info.Username != tt.wantUser {
				t.Errorf("username %q, want %q", info.Username, tt.wantUser)
			}
			isMaster := false
			for _, g := range info.Groups {
				isMaster = isMaster || g == "system:masters"
			}
			if isMaster != tt.wantMaster {
				t.Errorf("in system:masters = %v, want %v (groups %v)", isMaster, tt.wantMaster, info.Groups)
			}
		})
	}
}

func TestGrant(t *testing.T) {
	env := testbed.Env(t)
	ns := uniqueName(t, "grant")
	c := env.Cluster("c2")
	ensureNamespace(t, newClient(t, c.AdminConfig()), ns)

	tests := []struct {
		name      string
		user      string
		namespace string // "" grants cluster-wide
		rule      rbacv1.PolicyRule
		try       func(context.Context, kubernetes.Interface) error
	}{
		{
			name:      "namespaced",
			user:      "alice",
			namespace: ns,
			rule:      rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "get"}},
			try: func(ctx context.Context, client kubernetes.Interface) error {
				_, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				return err
			},
		},
		{
			name: "cluster-wide",
			user: "bob",
			rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns}, Verbs: []string{"get"}},
			try: func(ctx context.Context, client kubernetes.Interface) error {
				_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newClient(t, c.UserConfig(tt.user))
			if err := tt.try(t.Context(), client); !apierrors.IsForbidden(err) {
				t.Fatalf("before Grant: error %v, want Forbidden", err)
			}
			if err := c.Grant(t.Context(), tt.user, tt.namespace, tt.rule); err != nil {
				t.Fatalf("Grant: %v", err)
			}
			if err := tt.try(t.Context(), client); err != nil {
				t.Errorf("after Grant: %v", err)
			}
			// The grant is the user's only, and only in its cluster.
			if err := tt.try(t.Context(), newClient(t, c.UserConfig("carol"))); !apierrors.IsForbidden(err) {
				t.Errorf("other user after Grant: error %v, want Forbidden", err)
			}
			if err := tt.try(t.Context(), newClient(t, env.Cluster("c1").UserConfig(tt.user))); !apierrors.IsForbidden(err) {
				t.Errorf("other cluster after Grant: error %v, want Forbidden", err)
			}
		})
	}
}

func TestStopSecondaryRestart(t *testing.T) {
	env := testbed.Env(t)
	const name = "made-during-outage"
	ns := uniqueName(t, "outage")
	c := env.Cluster("c2")
	url := c.URL()
	client := newClient(t, c.AdminConfig())
	ensureNamespace(t, client, ns)

	begin := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %s", time.Since(begin).Round(time.Millisecond))
	restarted := false
	t.Cleanup(func() { // leave c2 up for the other tests
		if !restarted {
			if err := c.Restart(context.Background()); err != nil {
				t.Errorf("Restart in cleanup: %v", err)
			}
		}
	})
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	_, err := client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("get while stopped: error %v, want connection refused", err)
	}
	// The other cluster is not affected.
	if _, err := newClient(t, env.Cluster("c1").AdminConfig()).CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("c1 while c2 is stopped: %v", err)
	}

	begin = time.Now()
	secondary, err := c.StartSecondary(t.Context())
	if err != nil {
		t.Fatalf("StartSecondary: %v", err)
	}
	t.Logf("StartSecondary took %s", time.Since(begin).Round(time.Millisecond))
	if secondary.URL() == url {
		t.Errorf("secondary URL %s is the main URL", secondary.URL())
	}
	cm := configMap(ns, name, map[string]string{"via": "secondary"})
	if _, err := newClient(t, secondary.AdminConfig()).CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through secondary: %v", err)
	}
	if err := secondary.Stop(); err != nil {
		t.Errorf("secondary Stop: %v", err)
	}
	if err := secondary.Stop(); err != nil {
		t.Errorf("second secondary Stop: %v", err)
	}

	begin = time.Now()
	if err := c.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	restarted = true
	t.Logf("Restart took %s", time.Since(begin).Round(time.Millisecond))
	if c.URL() != url {
		t.Errorf("URL after Restart %s, want %s", c.URL(), url)
	}
	if err := c.Restart(t.Context()); err == nil {
		t.Errorf("Restart of a running cluster: no error")
	}
	// The client made before the outage works again, and sees the change.
	got, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get object made through the secondary: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"via": "secondary"}, got.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

func TestCompact(t *testing.T) {
	env := testbed.Env(t)
	const name = "churn"
	ns := uniqueName(t, "compact")
	c := env.Cluster("c1")
	client := newClient(t, c.AdminConfig())
	ensureNamespace(t, client, ns)
	cms := client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(t.Context(), configMap(ns, name, map[string]string{"n": "0"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	oldRV := cm.ResourceVersion
	for _, n := range []string{"1", "2", "3"} {
		cm.Data["n"] = n
		if cm, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update: %v", err)
		}
	}

	rev, err := env.Compact(t.Context())
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if last := mustParseInt(t, cm.ResourceVersion); rev < last {
		t.Errorf("Compact returned revision %d, older than the last write %d", rev, last)
	}
	var out map[string]any
	err = env.etcdCall(t.Context(), http.MethodPost, "/v3/kv/range", map[string]any{"key": "Lw==", "revision": oldRV}, &out)
	if err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Errorf("etcd read at revision %s after Compact: error %v, want \"required revision has been compacted\"", oldRV, err)
	}

	// A server started after the compaction has no events before it in its
	// watch cache: a watch from the old resource version gets 410.
	secondary, err := c.StartSecondary(t.Context())
	if err != nil {
		t.Fatalf("StartSecondary: %v", err)
	}
	defer func() {
		if err := secondary.Stop(); err != nil {
			t.Errorf("secondary Stop: %v", err)
		}
	}()
	opts := metav1.ListOptions{ResourceVersion: oldRV, FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	if err := watchGone(t.Context(), newClient(t, secondary.AdminConfig()).CoreV1().ConfigMaps(ns).Watch, opts); err != nil {
		t.Errorf("watch from compacted resource version: %v", err)
	}

	// The main server learns the compaction from compact_rev_key (polled every
	// 15 s) and stops serving Exact lists at compacted revisions.
	exact := metav1.ListOptions{ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cms.List(t.Context(), exact)
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exact list at compacted resource version: error %v after 30s, want 410", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// watchGone starts a watch and checks that it fails with 410, either at once
// or as its first event.
func watchGone(ctx context.Context, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), opts metav1.ListOptions) error {
	w, err := watchFn(ctx, opts)
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return nil
		}
		return fmt.Errorf("error %w, want 410", err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			return errors.New("watch closed without an event")
		}
		if status, isStatus := ev.Object.(*metav1.Status); ev.Type == watch.Error && isStatus && status.Code == http.StatusGone {
			return nil
		}
		return fmt.Errorf("event %s %T, want an Error with code 410", ev.Type, ev.Object)
	case <-ctx.Done():
		return fmt.Errorf("no event: %w", ctx.Err())
	}
}

func mustParseInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resource version %q is not a number: %v", s, err)
	}
	return n
}

func TestWriteKubeconfig(t *testing.T) {
	env := testbed.Env(t)
	tests := []struct {
		name     string
		user     string
		wantUser string
	}{
		{name: "admin", user: "admin", wantUser: "admin"},
		{name: "extra user", user: "carol", wantUser: "carol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := env.WriteKubeconfig(path, tt.user, env.Clusters()...); err != nil {
				t.Fatalf("WriteKubeconfig: %v", err)
			}
			cfg, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatalf("load kubeconfig: %v", err)
			}
			if cfg.CurrentContext != "c1" {
				t.Errorf("current context %q, want c1", cfg.CurrentContext)
			}
			for _, c := range env.Clusters() {
				if cl := cfg.Clusters[c.Name()]; cl == nil || cl.InsecureSkipTLSVerify || len(cl.CertificateAuthorityData) == 0 {
					t.Errorf("cluster entry %s: %+v, want CA data and TLS verification", c.Name(), cl)
				}
				restCfg, err := clientcmd.NewNonInteractiveClientConfig(*cfg, c.Name(), &clientcmd.ConfigOverrides{}, nil).ClientConfig()
				if err != nil {
					t.Fatalf("context %s: client config: %v", c.Name(), err)
				}
				if restCfg.Host != c.URL() {
					t.Errorf("context %s: host %s, want %s", c.Name(), restCfg.Host, c.URL())
				}
				review, err := newClient(t, restCfg).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("context %s: self subject review: %v", c.Name(), err)
				}
				if got := review.Status.UserInfo.Username; got != tt.wantUser {
					t.Errorf("context %s: user %q, want %q", c.Name(), got, tt.wantUser)
				}
			}
		})
	}
	if err := env.WriteKubeconfig(filepath.Join(t.TempDir(), "kubeconfig"), "mallory"); err == nil {
		t.Errorf("WriteKubeconfig for an unknown user: no error")
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name    string
		binDir  string
		opts    Options
		wantErr string
	}{
		{name: "binaries missing", binDir: "/nonexistent", wantErr: `run "make testbin"`},
		{name: "admin listed", opts: Options{Users: []string{"admin"}}, wantErr: `user "admin"`},
		{name: "duplicate user", opts: Options{Users: []string{"dave", "dave"}}, wantErr: `user "dave"`},
		{name: "comma in user", opts: Options{Users: []string{"a,b"}}, wantErr: "invalid user name"},
		{name: "negative clusters", opts: Options{Clusters: -1}, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.binDir != "" {
				t.Setenv(binDirEnv, tt.binDir)
			}
			e, err := Start(t.Context(), tt.opts)
			if err == nil {
				e.Stop()
				t.Fatalf("Start: no error, want one containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Start: error %q, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFindBinaries(t *testing.T) {
	b, err := findBinaries()
	if err != nil {
		t.Fatalf("findBinaries: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("moduleRoot: %v", err)
	}
	if os.Getenv(binDirEnv) == "" && b.apiserver != filepath.Join(root, "bin", "kube-apiserver") {
		t.Errorf("kube-apiserver at %s, want under %s/bin", b.apiserver, root)
	}
}

func TestStartFailure(t *testing.T) {
	real, err := findBinaries()
	if err != nil {
		t.Fatalf("findBinaries: %v", err)
	}
	tests := []struct {
		name          string
		script        string // the fake kube-apiserver
		wantErr       string
		wantPortInUse bool
	}{
		{
			name:    "server crashes",
			script:  "echo 'E1122 something went wrong: boom' >&2; exit 3",
			wantErr: "boom",
		},
		{
			name:          "port stays taken",
			script:        "echo 'listen tcp 127.0.0.1:1: bind: address already in use' >&2; exit 1",
			wantErr:       "address already in use",
			wantPortInUse: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(real.etcd, filepath.Join(dir, "etcd")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "kube-apiserver"), []byte("#!/bin/sh\n"+tt.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv(binDirEnv, dir)
			e, err := Start(t.Context(), Options{})
			if err == nil {
				e.Stop()
				t.Fatalf("Start: no error, want one containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), `cluster "c1"`) {
				t.Errorf("Start: error %q, want one about cluster \"c1\" containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, errPortInUse); got != tt.wantPortInUse {
				t.Errorf("Start: errors.Is(err, errPortInUse) = %v, want %v", got, tt.wantPortInUse)
			}
		})
	}
}
