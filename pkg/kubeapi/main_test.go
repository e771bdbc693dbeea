package kubeapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/kubeapi"
)

// testbed is two real clusters, c1 and c2.
var testbed = testcluster.NewShared(testcluster.Options{Clusters: 2})

func TestMain(m *testing.M) { testcluster.Main(m, testbed) }

// cachedTypes are the types the tests' fleetcache caches.
var cachedTypes = []string{"namespaces", "pods", "configmaps", "services", "deployments.apps", "widgets.example.com"}

// fleet is fleetcache serving the test clusters, authenticating callers
// with TokenReviews in c1 and authorizing them with SubjectAccessReviews in
// each member, and a kubeconfig with a context per member (c1, c2: the API
// servers) and per cluster of fleetcache (fleet-c1, fleet-c2), each as the
// user "admin".
type fleet struct {
	env        *testcluster.Env
	agg        *app.Aggregator
	url        string
	kubeconfig string
	// ca is the PEM of the certificate fleetcache serves.
	ca []byte
	// requests are those fleetcache answered.
	requests *recorder
}

// as returns f with a kubeconfig of user's.
func (f *fleet) as(t *testing.T, user string) *fleet {
	t.Helper()
	g := *f
	g.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-"+user)
	g.writeKubeconfig(t, user)
	return &g
}

// restConfig returns a client configuration that reaches cluster through
// fleetcache as the user admin.
func (f *fleet) restConfig(cluster string) *rest.Config {
	return &rest.Config{
		Host:            f.url + kubeapi.PathPrefix + cluster,
		BearerToken:     f.env.Cluster(cluster).AdminConfig().BearerToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: f.ca},
	}
}

// answered is one request fleetcache answered, with its status.
type answered struct {
	Method, Path string
	Query        url.Values
	Status       int
}

// recorder records the requests it passes on, as they begin, and their
// status once it is written.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []answered
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.seen = append(rec.seen, answered{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()})
	i := len(rec.seen) - 1
	rec.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w, set: func(code int) {
		rec.mu.Lock()
		rec.seen[i].Status = code
		rec.mu.Unlock()
	}}
	rec.next.ServeHTTP(sw, r)
	sw.WriteHeader(http.StatusOK) // if nothing was written
}

// since returns the requests begun after the first n, and how many were.
func (rec *recorder) since(n int) ([]answered, int) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.seen[min(n, len(rec.seen)):]), len(rec.seen)
}

type statusWriter struct {
	http.ResponseWriter
	set     func(int)
	written bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.written {
		return
	}
	w.written = true
	w.set(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func startFleet(t *testing.T, kubeOpts kubeapi.Options) *fleet {
	t.Helper()
	return startFleetWith(t, app.Options{KubeAPI: kubeOpts})
}

// startFleetWith is startFleet with opts' index and Kubernetes API options.
func startFleetWith(t *testing.T, opts app.Options) *fleet {
	t.Helper()
	testcluster.SkipShort(t, "the Kubernetes API against real API servers")
	env := testbed.Env(t)
	for _, c := range env.Clusters() {
		installWidgets(t, c)
	}
	infOpts := apptest.Informers(cachedTypes...)
	rec := &recorder{}
	af := apptest.StartServing(t, env, app.Options{
		Informers: infOpts,
		Auth:      app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()},
		KubeAPI:   opts.KubeAPI,
		Index:     opts.Index,
		Audit:     opts.Audit,
	}, apptest.Serving{TLS: true, Wrap: func(h http.Handler) http.Handler { rec.next = h; return rec }})
	agg := af.Aggregator
	f := &fleet{env: env, agg: agg, url: af.URL, requests: rec, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), ca: af.CA}
	f.writeKubeconfig(t, "admin")
	for _, c := range env.Clusters() {
		testcluster.Eventually(t, 90*time.Second, c.Name()+" synced", func() (bool, string) {
			st, ok := agg.Health.Cluster(c.Name())
			return ok && st.Status == health.Synced, fmt.Sprintf("%+v", st)
		})
	}
	return f
}

// writeKubeconfig writes the members' contexts and fleetcache's, as user.
func (f *fleet) writeKubeconfig(t *testing.T, user string) {
	t.Helper()
	if err := f.env.WriteKubeconfig(f.kubeconfig, user); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(f.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.env.Clusters() {
		name := "fleet-" + c.Name()
		cluster := *cfg.Clusters[c.Name()]
		cluster.Server, cluster.CertificateAuthorityData = f.url+kubeapi.PathPrefix+c.Name(), f.ca
		cfg.Clusters[name] = &cluster
		auth := *cfg.AuthInfos[c.Name()]
		cfg.AuthInfos[name] = &auth
		ctx := *cfg.Contexts[c.Name()]
		ctx.Cluster, ctx.AuthInfo = name, name
		cfg.Contexts[name] = &ctx
	}
	// The fleet's API, as the user of c1.
	fleetCluster := *cfg.Clusters["fleet-c1"]
	fleetCluster.Server = f.url + "/fleet"
	cfg.Clusters["fleet"] = &fleetCluster
	cfg.Contexts["fleet"] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: "fleet-c1"}
	if err := clientcmd.WriteToFile(*cfg, f.kubeconfig); err != nil {
		t.Fatal(err)
	}
}

// kubectlPath is the kubectl that make testbin builds, of the test servers'
// release.
func kubectlPath(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "bin", "kubectl")
}

// kubectl runs kubectl with the fleet's kubeconfig and returns its output;
// its error carries stderr.
func (f *fleet) kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	stdout, _, err := f.kubectlStderr(t, args...)
	return stdout, err
}

// kubectlStderr is kubectl that also returns stderr.
func (f *fleet) kubectlStderr(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(t), append([]string{"--kubeconfig", f.kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECACHEDIR=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String(), nil
}

// columnsGap separates kubectl's columns: two spaces or more.
var columnsGap = regexp.MustCompile(`\s{2,}`)

// withoutAge returns kubectl's table output with the AGE column left out and
// the columns separated by " | " (their widths follow the ages' widths).
func withoutAge(out string) string {
	var b strings.Builder
	age := -1
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		cells := columnsGap.Split(strings.TrimSpace(line), -1)
		if age < 0 {
			for i, c := range cells {
				if c == "AGE" {
					age = i
				}
			}
		}
		if age >= 0 && age < len(cells) {
			cells = append(cells[:age], cells[age+1:]...)
		}
		b.WriteString(strings.Join(cells, " | "))
		b.WriteByte('\n')
	}
	return b.String()
}

type kubeapiOpts = kubeapi.Options
