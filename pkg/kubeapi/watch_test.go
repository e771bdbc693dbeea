package kubeapi_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// lockedBuffer is a process's output, read while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startKubectl starts kubectl in the background; the test's end kills it.
func (f *fleet) startKubectl(t *testing.T, args ...string) *lockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectlPath(t), append([]string{"--kubeconfig", f.kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECACHEDIR=" + t.TempDir()}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	return out
}

// TestKubectlWatch: kubectl get -w through fleetcache prints, across a
// create, an update and a delete, what it prints against the member.
func TestKubectlWatch(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	const ns = "kubectl-watch"
	kube := kubernetes.NewForConfigOrDie(f.env.Cluster("c1").AdminConfig())
	ctx := t.Context()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}, Data: map[string]string{"a": "1"}}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the first ConfigMap cached", func() (bool, string) {
		out, err := f.kubectl(t, "--context", "fleet-c1", "get", "cm", "first", "-n", ns)
		return err == nil, fmt.Sprint(out, err)
	})
	args := []string{"get", "configmaps", "-n", ns, "-w", "--output-watch-events"}
	member := f.startKubectl(t, append([]string{"--context", "c1"}, args...)...)
	fleet := f.startKubectl(t, append([]string{"--context", "fleet-c1"}, args...)...)
	for _, out := range []*lockedBuffer{member, fleet} {
		testcluster.Eventually(t, 30*time.Second, "the list printed", func() (bool, string) {
			return strings.Contains(out.String(), "first"), out.String()
		})
	}

	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: ns}, Data: map[string]string{"b": "1"}}
	created, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Data["c"] = "2"
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The list's row, then ADDED, MODIFIED and DELETED: four rows and
	// the header.
	lines := func(out *lockedBuffer) int { return strings.Count(out.String(), "\n") }
	testcluster.Eventually(t, 30*time.Second, "both watches printed every change", func() (bool, string) {
		return lines(member) >= 5 && lines(fleet) >= 5, member.String() + "\n" + fleet.String()
	})
	if diff := cmp.Diff(withoutAge(member.String()), withoutAge(fleet.String())); diff != "" {
		t.Errorf("kubectl get -w through fleetcache (+) and against the member (-):\n%s", diff)
	}
	if !strings.Contains(fleet.String(), "DELETED") || !strings.Contains(fleet.String(), "MODIFIED") {
		t.Errorf("the watch through fleetcache printed:\n%s", fleet)
	}
}

// TestKubectlWritesRefused: apply, create, edit and delete through
// fleetcache fail with the message that says where to write, and change
// nothing.
func TestKubectlWritesRefused(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	const ns = "kubectl-writes"
	if _, err := f.kubectl(t, "--context", "c1", "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kubectl(t, "--context", "c1", "create", "configmap", "existing", "-n", ns, "--from-literal=a=1"); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the ConfigMap cached", func() (bool, string) {
		out, err := f.kubectl(t, "--context", "fleet-c1", "get", "cm", "existing", "-n", ns)
		return err == nil, fmt.Sprint(out, err)
	})
	file := filepath.Join(t.TempDir(), "cm.yaml")
	doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %%s, namespace: %s}\ndata: {a: \"2\"}\n", ns)
	for _, tt := range []struct {
		name string
		args []string
		doc  string
	}{
		{"apply new", []string{"apply", "-f", file}, fmt.Sprintf(doc, "new")},
		{"apply existing", []string{"apply", "-f", file}, fmt.Sprintf(doc, "existing")},
		{"create", []string{"create", "-f", file}, fmt.Sprintf(doc, "new")},
		{"label", []string{"label", "cm", "existing", "-n", ns, "x=y"}, ""},
		{"delete", []string{"delete", "cm", "existing", "-n", ns}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.doc != "" {
				if err := os.WriteFile(file, []byte(tt.doc), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, err := f.kubectl(t, append([]string{"--context", "fleet-c1"}, tt.args...)...)
			if err == nil {
				t.Fatalf("kubectl %s succeeded through fleetcache: %s", tt.args, out)
			}
			for _, want := range []string{"MethodNotAllowed", `fleetcache is a read-only cache of cluster \"c1\"`, f.env.Cluster("c1").URL()} {
				if !strings.Contains(strings.ReplaceAll(err.Error(), `"`, `\"`), want) && !strings.Contains(err.Error(), want) {
					t.Errorf("kubectl %s: %v\nwant %q in it", tt.args, err, want)
				}
			}
		})
	}
	out, err := f.kubectl(t, "--context", "c1", "get", "cm", "-n", ns, "-o", "jsonpath={range .items[*]}{.metadata.name}={.data.a} {.metadata.labels}{end}")
	if err != nil || out != "existing=1 " {
		t.Errorf("the member's ConfigMaps after the refused writes: %q, %v", out, err)
	}
}
