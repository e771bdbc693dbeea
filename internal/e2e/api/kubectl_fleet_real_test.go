package api_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/apptest"
	"github.com/fleetcache/fleetcache/internal/fleetctl"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/inventory"
)

// kubectlFleet runs `kubectl fleet args...` in the test's process and
// returns its exit code, stdout and stderr.
func kubectlFleet(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := fleetctl.Main(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// serverURL is the fleet's base URL, as --server takes it.
func (f *fleet) serverURL() string { return strings.TrimSuffix(f.url, "/graphql") }

// parseTable splits kubectl's aligned table output into rows of cells,
// using the positions of the expected column headers in the header line:
// tabwriter starts every cell of a column where its header starts, and a
// cell may hold spaces ("3 (5m ago)") or be empty.
func parseTable(t *testing.T, out string, headers []string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	starts := make([]int, len(headers))
	at := 0
	for i, h := range headers {
		j := strings.Index(lines[0][at:], h)
		if j < 0 || (i > 0 && j < 3) {
			t.Fatalf("header %q not found in %q after offset %d", h, lines[0], at)
		}
		starts[i] = at + j
		at += j + len(h)
	}
	if got := strings.Join(strings.Fields(lines[0]), " "); got != strings.Join(strings.Fields(strings.Join(headers, " ")), " ") {
		t.Fatalf("header line %q, want the headers %q", lines[0], headers)
	}
	var rows [][]string
	for _, l := range lines[1:] {
		cells := make([]string, len(headers))
		for i, s := range starts {
			end := len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			if s < len(l) {
				cells[i] = strings.TrimRight(l[s:end], " ")
			}
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestKubectlFleetGetOnRealClusters creates objects of every kind of
// columnKinds in the three clusters, and checks that `kubectl fleet get
// KIND -A -o wide`, and without -o wide, prints for every cluster the rows
// and cells of the API server's Table (what kubectl get -o wide and
// kubectl get print), column by column, with CLUSTER and NAMESPACE first,
// ages and other relative times compared without their text.
func TestKubectlFleetGetOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("kfleet")
	clusters := env.Clusters()
	f := startColumnFleet(t, ns)

	for _, k := range columnKinds {
		// Every object was created before the fleet started: once the
		// index holds them all, their columns are final.
		want := map[string][]serverColumn{} // by cluster
		for _, c := range clusters {
			want[c.Name()] = serverTableWithAges(t, c, k, ns)
		}
		for _, wide := range []bool{true, false} {
			args := []string{"get", k.resource, "-A", "-l", columnLabel + "=" + ns, "--server", f.serverURL()}
			if wide {
				args = append(args, "-o", "wide")
			}
			headers := []string{"CLUSTER"}
			if k.namespaced {
				headers = append(headers, "NAMESPACE")
			}
			for _, def := range want[clusters[0].Name()][0].defs {
				if wide || def.Priority == 0 {
					headers = append(headers, strings.ToUpper(def.Name))
				}
			}
			var wantRows, gotRows [][]string
			testcluster.Eventually(t, 30*time.Second, "kubectl fleet to print the "+k.resource, func() (bool, string) {
				code, out, errOut := kubectlFleet(t.Context(), args...)
				if code != 0 || out == "" {
					_, counts, cerr := kubectlFleet(t.Context(), "count", "-A", "--by", "kind", "-l", columnLabel+"="+ns, "--server", f.serverURL())
					return false, errOut + "; objects by kind: " + counts + cerr
				}
				gotRows = parseTable(t, out, headers)
				wantRows = nil
				for _, c := range clusters {
					for _, r := range want[c.Name()] {
						cells := []string{c.Name()}
						if k.namespaced {
							cells = append(cells, ns)
						}
						for i, def := range r.defs {
							if wide || def.Priority == 0 {
								cells = append(cells, r.cells[i])
							}
						}
						wantRows = append(wantRows, cells)
					}
				}
				return len(gotRows) == len(wantRows), fmt.Sprintf("%d rows, want %d:\n%s", len(gotRows), len(wantRows), out)
			})
			normalize := func(rows [][]string) [][]string {
				out := make([][]string, len(rows))
				for i, r := range rows {
					for _, c := range r {
						out[i] = append(out[i], relative.ReplaceAllString(c, "<duration>"))
					}
				}
				// kubectl fleet prints in the server's order: cluster,
				// namespace, name; the Tables by name within a cluster.
				slices.SortFunc(out, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00")) })
				return out
			}
			if diff := gocmp.Diff(normalize(wantRows), normalize(gotRows)); diff != "" {
				t.Errorf("kubectl fleet get %s -A (wide %v) (-servers' Tables +kubectl fleet):\n%s", k.resource, wide, diff)
			}
		}
	}
}

// serverColumn is a row of a server's Table with its column definitions,
// the age included.
type serverColumn struct {
	defs  []metav1.TableColumnDefinition
	cells []string
}

// serverTableWithAges lists kind k's test objects as the API server's
// Table, every column kept.
func serverTableWithAges(t *testing.T, c *testcluster.Cluster, k columnKind, ns string) []serverColumn {
	t.Helper()
	table := fetchTable(t, c, k, ns)
	var out []serverColumn
	for _, r := range table.Rows {
		row := serverColumn{defs: table.ColumnDefinitions}
		for i := range table.ColumnDefinitions {
			row.cells = append(row.cells, cellText(t, r.Cells[i]))
		}
		out = append(out, row)
	}
	if len(out) == 0 {
		t.Fatalf("the server lists no %s", k.resource)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestKubectlFleetWatchAcrossDisconnect runs `kubectl fleet get configmaps
// -w` through a TCP proxy, cuts every connection and refuses new ones
// while ConfigMaps are created and deleted, restores it, and checks that
// every change is printed exactly once: the watch resumed from its last
// cursor.
func TestKubectlFleetWatchAcrossDisconnect(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("kfleet-watch")
	c := env.Clusters()[0]
	d := dyn(t, c)
	createNamespace(t, d, ns)
	f := startFleet(t, "configmaps", "namespaces")
	f.waitSynced(t)
	proxy, err := testcluster.StartProxy(strings.TrimPrefix(f.serverURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- fleetctl.Main(ctx, []string{"get", "configmaps", "-n", ns, "-w", "--output-watch-events", "-o", "name",
			"--server", "http://" + proxy.Addr()}, &out, &errOut)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("kubectl fleet exited with %d: %s", code, errOut.String())
		}
	}()
	var want []string
	createCM := func(name string) {
		create(t, d, gvr("", "v1", "configmaps"), configMap(ns, name, nil, map[string]any{"k": "v"}))
		want = append(want, "ADDED configmap/"+name)
	}
	printed := func(lines []string) func() (bool, string) {
		return func() (bool, string) {
			got := out.String()
			for _, l := range lines {
				if !strings.Contains(got, l+"\n") {
					return false, fmt.Sprintf("no %q in:\n%s\nstderr: %s", l, got, errOut.String())
				}
			}
			return true, ""
		}
	}
	// The watch prints the ConfigMaps created after it started: wait for
	// it to list (the namespace is empty, so it says so) before creating.
	testcluster.Eventually(t, 30*time.Second, "the watch to start", func() (bool, string) {
		return strings.Contains(errOut.String(), "No resources found"), errOut.String()
	})
	for i := range 5 {
		createCM(fmt.Sprintf("before-%d", i))
	}
	testcluster.Eventually(t, 30*time.Second, "the first changes printed", printed(want))

	proxy.Cut()
	for i := range 5 {
		createCM(fmt.Sprintf("during-%d", i))
	}
	if err := d.Resource(gvr("", "v1", "configmaps")).Namespace(ns).Delete(t.Context(), "before-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "DELETED configmap/before-0")
	// The index has the changes made during the cut before the proxy
	// comes back, so they can only reach the watch by its resume.
	testcluster.Eventually(t, 30*time.Second, "the index to hold the changes", func() (bool, string) {
		var got struct{ Resources struct{ TotalCount int } }
		f.mustQuery(t, `query($ns: [String!]) { resources(filter: {kinds: ["ConfigMap"], namespaces: $ns}) { totalCount } }`,
			map[string]any{"ns": []any{ns}}, &got)
		return got.Resources.TotalCount == 9, fmt.Sprint(got.Resources.TotalCount)
	})
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		createCM(fmt.Sprintf("after-%d", i))
	}
	testcluster.Eventually(t, 60*time.Second, "every change printed after the cut", printed(want))
	if !strings.Contains(errOut.String(), "watch interrupted") {
		t.Errorf("the watch was not interrupted by the cut; stderr: %s", errOut.String())
	}
	// Exactly once each, and nothing else (ConfigMaps are not modified).
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(lines)
	slices.Sort(want)
	if diff := gocmp.Diff(want, lines); diff != "" {
		t.Errorf("printed changes (-want +got):\n%s", diff)
	}
}

// TestKubectlFleetWatchExpiredCursor cuts a watch's connection while more
// changes happen than the index retains: when it comes back, its cursor
// has expired, and it lists again, printing every ConfigMap, then follows.
func TestKubectlFleetWatchExpiredCursor(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("kfleet-expired")
	c := env.Clusters()[0]
	d := dyn(t, c)
	createNamespace(t, d, ns)
	// Five changes retained, and one deletion: two deletions while the
	// client is away leave its cursor neither in the feed nor resumable
	// from the clocks (docs/design.md).
	f := newFleet(t, app.Options{Informers: apptest.Informers("configmaps", "namespaces"), Index: index.Options{Retention: 5, MaxTombstones: 1}})
	f.waitSynced(t)
	proxy, err := testcluster.StartProxy(strings.TrimPrefix(f.serverURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- fleetctl.Main(ctx, []string{"get", "configmaps", "-n", ns, "-w", "-o", "name", "--server", "http://" + proxy.Addr()}, &out, &errOut)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("kubectl fleet exited with %d: %s", code, errOut.String())
		}
	}()
	cm := gvr("", "v1", "configmaps")
	testcluster.Eventually(t, 30*time.Second, "the watch to start", func() (bool, string) {
		return strings.Contains(errOut.String(), "No resources found"), errOut.String()
	})
	create(t, d, cm, configMap(ns, "first", nil, nil))
	testcluster.Eventually(t, 30*time.Second, "the first change", func() (bool, string) {
		return strings.Contains(out.String(), "configmap/first\n"), out.String()
	})

	proxy.Cut()
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("during-%d", i)
		create(t, d, cm, configMap(ns, name, nil, nil))
		if i < 2 {
			if err := d.Resource(cm).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		names = append(names, name)
	}
	testcluster.Eventually(t, 30*time.Second, "the index to hold the changes", func() (bool, string) {
		var got struct{ Resources struct{ TotalCount int } }
		f.mustQuery(t, `query($ns: [String!]) { resources(filter: {kinds: ["ConfigMap"], namespaces: $ns}) { totalCount } }`,
			map[string]any{"ns": []any{ns}}, &got)
		return got.Resources.TotalCount == 9, fmt.Sprint(got.Resources.TotalCount)
	})
	before := len(out.String())
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 60*time.Second, "a new list after the expired cursor", func() (bool, string) {
		relisted := out.String()[before:]
		for _, n := range append([]string{"first"}, names...) {
			if !strings.Contains(relisted, "configmap/"+n+"\n") {
				return false, fmt.Sprintf("no %s in %q; stderr %s", n, relisted, errOut.String())
			}
		}
		return true, ""
	})
	if !strings.Contains(errOut.String(), "listing again") {
		t.Errorf("stderr does not say that it lists again: %s", errOut.String())
	}
	// And it follows from the new list.
	create(t, d, cm, configMap(ns, "after", nil, nil))
	testcluster.Eventually(t, 30*time.Second, "a change after the new list", func() (bool, string) {
		return strings.Contains(out.String(), "configmap/after\n"), out.String()
	})
}

// TestKubectlFleetErrorsOnRealClusters checks that each failure says what
// went wrong: an unreachable server, a token fleetcache refuses (401), a
// filter it rejects, a kind it does not cache; and that the kubeconfig
// context named fleetcache is the default, with its user's token.
func TestKubectlFleetErrorsOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	home := env.Clusters()[0]
	f := newFleet(t, app.Options{Informers: apptest.Informers("configmaps", "namespaces"),
		Auth: app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: home.AdminConfig()}})
	token := home.AdminConfig().BearerToken
	if token == "" {
		t.Fatal("the test bed's admin has no bearer token")
	}
	// Credentials go over https only (clientcmd's rule, as kubectl's):
	// serve the aggregator with TLS, its certificate in a CA file.
	srv := httptest.NewTLSServer(f.Handler)
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	server := []string{"--server", srv.URL, "--certificate-authority", ca}
	testcluster.Eventually(t, 90*time.Second, "every cluster SYNCED", func() (bool, string) {
		code, out, errOut := kubectlFleet(t.Context(), append(server, "clusters", "--token", token)...)
		return code == 0 && strings.Count(out, "SYNCED") == len(env.Clusters()), out + errOut
	})

	// A kubeconfig whose current context is another server: the context
	// named fleetcache is used, with its user's token.
	closed := closedPortURL(t)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	writeKubeconfig(t, kubeconfig, srv.URL, ca, token, closed)

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a substring; "" for none expected
		stderr []string
	}{
		{name: "kubeconfig context fleetcache", args: []string{"--kubeconfig", kubeconfig, "get", "ns", "kube-system"},
			stdout: "kube-system"},
		{name: "kubeconfig current context is not fleetcache", args: []string{"--kubeconfig", kubeconfig, "--context", "cluster", "clusters"},
			code: 1, stderr: []string{"cannot reach fleetcache at " + closed + "/graphql", `context "cluster"`}},
		{name: "unreachable", args: []string{"clusters", "--server", closed}, code: 1,
			stderr: []string{"cannot reach fleetcache at " + closed + "/graphql", "connection refused"}},
		{name: "no token", args: []string{"get", "configmaps", "-A"}, code: 1,
			stderr: []string{"refused the credentials (401 Unauthorized)", "--token"}},
		{name: "wrong token", args: []string{"get", "configmaps", "-A", "-w", "--token", "not-a-token"}, code: 1,
			stderr: []string{"refused the credentials (401 Unauthorized)"}},
		{name: "bad label selector", args: []string{"get", "configmaps", "-A", "-l", "app in (web", "--token", token}, code: 1,
			stderr: []string{"Error from server (BAD_USER_INPUT)", "invalid label selector"}},
		{name: "bad field selector", args: []string{"count", "configmaps", "--field-selector", "data.k~v", "--token", token}, code: 1,
			stderr: []string{"Error from server (BAD_USER_INPUT)", `invalid field selector "data.k~v"`}},
		{name: "bad sort", args: []string{"get", "configmaps", "-A", "--sort-by", ".metadata..name", "--token", token}, code: 1,
			stderr: []string{"Error from server (BAD_USER_INPUT)", `invalid path "metadata..name"`}},
		{name: "sort through a list", args: []string{"get", "pods", "-A", "--sort-by", ".status.containerStatuses[0].restartCount", "--token", token}, code: 2,
			stderr: []string{"refuses a path through a list ([0])", "--field-selector 'status.containerStatuses[].restartCount>3'"}},
		{name: "unknown kind", args: []string{"get", "widgets", "--token", token}, code: 1,
			stderr: []string{`the server doesn't have a resource type "widgets"`, "configmaps"}},
		{name: "not found", args: []string{"get", "ns", "no-such-namespace", "--token", token}, code: 1,
			stderr: []string{`namespaces "no-such-namespace" not found in any cluster`}},
		{name: "bad cluster selector", args: []string{"get", "configmaps", "-A", "--cluster-selector", "env in (prod", "--token", token}, code: 1,
			stderr: []string{"Error from server (BAD_USER_INPUT)", "env in (prod"}},
		{name: "token over http", args: []string{"clusters", "--server", f.serverURL(), "--token", token}, code: 1,
			stderr: []string{"refused the credentials (401 Unauthorized)", "over https only"}},
		{name: "usage", args: []string{"get"}, code: 2, stderr: []string{"get takes a kind"}},
	}
	t.Run("watch over TLS with a token", func(t *testing.T) {
		// The WebSocket goes through client-go's transport: its TLS
		// settings and the bearer token on the upgrade request.
		ns := freshNamespace("kfleet-tls")
		d := dyn(t, home)
		createNamespace(t, d, ns)
		create(t, d, gvr("", "v1", "configmaps"), configMap(ns, "listed", nil, nil))
		testcluster.Eventually(t, 30*time.Second, "the index to hold it", func() (bool, string) {
			code, out, errOut := kubectlFleet(t.Context(), append(slices.Clone(server), "get", "cm", "-n", ns, "--token", token)...)
			return code == 0 && strings.Contains(out, "listed"), out + errOut
		})
		ctx, cancel := context.WithCancel(t.Context())
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- fleetctl.Main(ctx, append(slices.Clone(server), "get", "cm", "-n", ns, "-w", "--token", token), &out, &errOut)
		}()
		// The watch follows from its list's revision: a ConfigMap created
		// once the list is printed is a change it prints, however late
		// the subscription starts.
		testcluster.Eventually(t, 30*time.Second, "the list", func() (bool, string) {
			return strings.Contains(out.String(), "listed"), out.String() + errOut.String()
		})
		create(t, d, gvr("", "v1", "configmaps"), configMap(ns, "cm-after", nil, nil))
		testcluster.Eventually(t, 30*time.Second, "the change", func() (bool, string) {
			return strings.Contains(out.String(), "cm-after"), out.String() + errOut.String()
		})
		cancel()
		if code := <-done; code != 0 || !strings.Contains(out.String(), "cm-") {
			t.Errorf("exit %d; stdout %q; stderr %q", code, out.String(), errOut.String())
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			args := tc.args
			if !slices.Contains(args, "--server") && !slices.Contains(args, "--kubeconfig") {
				args = append(slices.Clone(server), args...)
			}
			code, out, errOut := kubectlFleet(ctx, args...)
			t.Logf("exit %d, stderr: %s", code, errOut)
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stdout %q, stderr %q", code, tc.code, out, errOut)
			}
			if tc.stdout != "" && !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout %q lacks %q", out, tc.stdout)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q lacks %q", errOut, s)
				}
			}
		})
	}
}

// TestKubectlFleetClusterSelectorOnRealClusters labels the three
// clusters and checks --cluster-selector, counts by a cluster label and the
// labels of clusters -o wide.
func TestKubectlFleetClusterSelectorOnRealClusters(t *testing.T) {
	env := testbed.Env(t)
	ns := freshNamespace("kfleet-sel")
	for _, c := range env.Clusters() {
		d := dyn(t, c)
		createNamespace(t, d, ns)
		create(t, d, gvr("", "v1", "configmaps"), configMap(ns, "settings", nil, map[string]any{"k": "v"}))
	}
	f := startFleet(t, "configmaps", "namespaces")
	f.waitSynced(t)
	f.Inventory.Set(map[string]inventory.Info{
		"c1": {Labels: map[string]string{"env": "prod", "region": "eu"}},
		"c2": {Labels: map[string]string{"env": "prod", "region": "us"}},
		"c3": {Labels: map[string]string{"env": "staging"}},
	})
	server := []string{"--server", f.serverURL()}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"get", []string{"get", "cm", "-n", ns, "--cluster-selector", "env=prod"}, `CLUSTER   NAME       DATA   AGE
c1        settings   1      <duration>
c2        settings   1      <duration>
`},
		{"get with clusters", []string{"get", "cm", "-n", ns, "--cluster-selector", "env=prod", "--clusters", "c2,c3", "-o", "name"}, "configmap/settings\n"},
		{"count", []string{"count", "configmaps", "-n", ns, "--by", "cluster-label=env"}, `CLUSTER LABEL env   COUNT
prod                2
staging             1
`},
		{"count selected", []string{"count", "configmaps", "-n", ns, "--cluster-selector", "region", "--by", "cluster"}, `CLUSTER   COUNT
c1        1
c2        1
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := kubectlFleet(t.Context(), append(slices.Clone(server), tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if diff := gocmp.Diff(tc.want, relativeInTable.ReplaceAllString(out, "<duration>")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	code, out, errOut := kubectlFleet(t.Context(), append(server, "clusters", "-o", "wide")...)
	if code != 0 || !strings.Contains(out, "LABELS") || !strings.Contains(out, "env=prod,region=eu") || !strings.Contains(out, "env=staging") {
		t.Errorf("clusters -o wide: exit %d, %s%s", code, out, errOut)
	}
}

// relativeInTable matches an age cell, padding included.
var relativeInTable = regexp.MustCompile(`(?m)(\d+[smhdy])+ *$`)

// writeKubeconfig writes a kubeconfig whose current context, "cluster",
// names closed, a server that refuses connections, and whose context
// "fleetcache" names server with token.
func writeKubeconfig(t *testing.T, path, server, ca, token, closed string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: cluster
clusters:
- name: fleetcache
  cluster: {server: %q, certificate-authority: %q}
- name: cluster
  cluster: {server: %q}
users:
- name: fleet-user
  user: {token: %q}
- name: cluster-user
  user: {token: cluster-token}
contexts:
- name: fleetcache
  context: {cluster: fleetcache, user: fleet-user}
- name: cluster
  context: {cluster: cluster, user: cluster-user}
`, server, ca, closed, token)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// closedPortURL returns the URL of a loopback port nothing listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}
