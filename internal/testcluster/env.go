package testcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// startTimeout bounds Start, Restart and StartSecondary on top of their ctx.
	startTimeout = 2 * time.Minute
	// adminUser is the built-in user in group system:masters.
	adminUser = "admin"
	// compactRevKey is base64 of "compact_rev_key", the etcd key (outside every
	// prefix) where kube-apiserver records the last compaction revision.
	compactRevKey = "Y29tcGFjdF9yZXZfa2V5"
)

// Options configures Start.
type Options struct {
	// Clusters is the number of clusters, named "c1", "c2", …. Default 1.
	Clusters int
	// Users are extra users, each with its own bearer token and no rights
	// until Cluster.Grant gives them some. "admin" is built in and must not
	// be listed. Default {"alice", "bob", "carol"}.
	Users []string
	// NoWatchCache names clusters whose API servers run without a watch
	// cache (--watch-cache=false): every watch is served by etcd, so one from
	// a compacted resourceVersion gets 410 Gone while the server stays up.
	NoWatchCache []string
}

// withDefaults fills in defaults and validates.
func (o Options) withDefaults() (Options, error) {
	if o.Clusters == 0 {
		o.Clusters = 1
	}
	if o.Clusters < 0 {
		return o, fmt.Errorf("options: clusters must not be negative, got %d", o.Clusters)
	}
	if o.Users == nil {
		o.Users = []string{"alice", "bob", "carol"}
	}
	seen := map[string]bool{adminUser: true}
	for _, u := range o.Users {
		if u == "" || strings.ContainsAny(u, ",\"\n\r") {
			return o, fmt.Errorf("options: invalid user name %q", u)
		}
		if seen[u] {
			return o, fmt.Errorf("options: user %q is built in or listed twice", u)
		}
		seen[u] = true
	}
	for _, name := range o.NoWatchCache {
		if n, err := strconv.Atoi(strings.TrimPrefix(name, "c")); err != nil || !strings.HasPrefix(name, "c") || n < 1 || n > o.Clusters {
			return o, fmt.Errorf("options: no-watch-cache cluster %q is not one of c1…c%d", name, o.Clusters)
		}
	}
	o.Users = slices.Clone(o.Users)
	return o, nil
}

// Env is one etcd and the API servers of N clusters that store their data in
// it under separate prefixes. Create it with Start and release it with Stop.
type Env struct {
	bins      binaries
	dir       string            // temporary directory holding everything
	tokens    map[string]string // user -> bearer token; includes adminUser
	tokenFile string
	saKeyFile string

	etcd     *process
	etcdURL  string
	etcdHTTP *http.Client

	clusters []*Cluster

	logSeq atomic.Int64 // numbers the log files

	mu          sync.Mutex
	secondaries []*Secondary // started and not yet stopped
	stopped     bool

	stopOnce sync.Once
}

// Start starts etcd and opts.Clusters API servers, the servers concurrently,
// and returns once each is ready: /readyz is ok, namespace "default" exists and
// the bootstrap RBAC roles exist, so Grant works. It fails, never skips, when
// the binaries are missing. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (*Env, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, startTimeout, errors.New("test cluster start timed out"))
	defer cancel()

	dir, err := os.MkdirTemp("", "fleetcache-testcluster-")
	if err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	e := &Env{
		bins:     bins,
		dir:      dir,
		tokens:   map[string]string{},
		etcdHTTP: &http.Client{Transport: &http.Transport{}},
	}
	if err := e.start(ctx, opts); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// start does the work of Start; the caller cleans up on error.
func (e *Env) start(ctx context.Context, opts Options) error {
	if err := e.writeCredentials(opts.Users); err != nil {
		return err
	}
	if err := e.startEtcd(ctx); err != nil {
		return err
	}
	for i := range opts.Clusters {
		name := fmt.Sprintf("c%d", i+1)
		certDir := filepath.Join(e.dir, name, "certs")
		if err := os.MkdirAll(certDir, 0o700); err != nil {
			return fmt.Errorf("create cert dir of cluster %q: %w", name, err)
		}
		e.clusters = append(e.clusters, &Cluster{env: e, name: name, prefix: "/fleetcache/" + name, certDir: certDir,
			noWatchCache: slices.Contains(opts.NoWatchCache, name)})
	}
	errs := make([]error, len(e.clusters))
	var wg sync.WaitGroup
	for i, c := range e.clusters {
		wg.Go(func() { errs[i] = c.startFirst(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeCredentials writes the token file and the service account key.
func (e *Env) writeCredentials(users []string) error {
	var buf bytes.Buffer
	for _, u := range append([]string{adminUser}, users...) {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("generate token: %w", err)
		}
		token := hex.EncodeToString(b)
		e.tokens[u] = token
		if u == adminUser {
			fmt.Fprintf(&buf, "%s,%s,%s-uid,\"system:masters\"\n", token, u, u)
		} else {
			fmt.Fprintf(&buf, "%s,%s,%s-uid\n", token, u, u)
		}
	}
	e.tokenFile = filepath.Join(e.dir, "tokens.csv")
	if err := os.WriteFile(e.tokenFile, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	e.saKeyFile = filepath.Join(e.dir, "sa.key")
	if err := os.WriteFile(e.saKeyFile, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	return nil
}

// logPath returns a fresh log file path for one run of a process.
func (e *Env) logPath(name string) string {
	return filepath.Join(e.dir, fmt.Sprintf("%s.%d.log", name, e.logSeq.Add(1)))
}

// startEtcd starts etcd on fresh ports and waits until it is healthy.
func (e *Env) startEtcd(ctx context.Context) error {
	var err error
	for range portAttempts {
		err = e.tryStartEtcd(ctx)
		if !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

func (e *Env) tryStartEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	dataDir := filepath.Join(e.dir, "etcd")
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("clean etcd data dir: %w", err)
	}
	args := []string{
		"--name", "default",
		"--data-dir", dataDir,
		"--listen-client-urls", clientURL,
		"--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default=" + peerURL,
		"--log-level", "warn",
		"--unsafe-no-fsync",
		"--quota-backend-bytes", strconv.Itoa(8 << 30),
	}
	p, err := startProcess("etcd", e.bins.etcd, args, e.logPath("etcd"))
	if err != nil {
		return err
	}
	e.etcd = p
	e.etcdURL = clientURL
	err = waitReady(ctx, p, func(ctx context.Context) (bool, error) {
		var health struct {
			Health string `json:"health"`
		}
		if err := e.etcdCall(ctx, http.MethodGet, "/health", nil, &health); err != nil {
			return false, err
		}
		return health.Health == "true", nil
	})
	if err != nil {
		_ = p.stop()
		e.etcd = nil
		return fmt.Errorf("start etcd: %w", err)
	}
	return nil
}

// etcdCall sends one request to etcd's HTTP API and decodes the JSON answer.
func (e *Env) etcdCall(ctx context.Context, method, path string, body, out any) error {
	var reqBody io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode etcd request %s: %w", path, err)
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.etcdURL+path, reqBody)
	if err != nil {
		return fmt.Errorf("etcd request %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.etcdHTTP.Do(req)
	if err != nil {
		return fmt.Errorf("etcd request %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd request %s: read answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd request %s: status %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("etcd request %s: decode answer %q: %w", path, data, err)
	}
	return nil
}

// Stop stops every process the Env started (secondaries, API servers, etcd),
// waits for them and for every goroutine the Env started, and removes the
// temporary directory. It is idempotent.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.stopped = true
		secondaries := e.secondaries
		e.secondaries = nil
		e.mu.Unlock()

		var wg sync.WaitGroup
		for _, s := range secondaries {
			wg.Go(func() { _ = s.stopProcess() })
		}
		for _, c := range e.clusters {
			wg.Go(func() { _ = c.Stop() })
		}
		wg.Wait()
		if e.etcd != nil {
			_ = e.etcd.stop()
		}
		e.etcdHTTP.CloseIdleConnections()
		_ = os.RemoveAll(e.dir)
	})
}

// Clusters returns the clusters in order c1, c2, ….
func (e *Env) Clusters() []*Cluster {
	return slices.Clone(e.clusters)
}

// Cluster returns the cluster with the given name, or nil if there is none.
func (e *Env) Cluster(name string) *Cluster {
	for _, c := range e.clusters {
		if c.name == name {
			return c
		}
	}
	return nil
}

// Compact physically compacts etcd, and so every cluster, at its current
// revision and returns that revision. Reads that reach etcd at an older
// revision then fail with 410 Gone. It also records the revision in
// compact_rev_key, as kube-apiserver's own compactor does, so that within about
// 15 s the API servers stop serving Exact lists at older revisions from their
// list snapshots.
//
// A running API server's watch cache does not learn about compactions: it keeps
// serving watches from any resource version it still holds events for. A watch
// from a resource version older than the server's watch cache gets 410, which
// is always the case on a server started after that version: after
// Cluster.Restart, or on a Secondary.
func (e *Env) Compact(ctx context.Context) (int64, error) {
	var rangeResp struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	// Key "/" (base64 "Lw==") exists or not; either way the header carries the revision.
	if err := e.etcdCall(ctx, http.MethodPost, "/v3/kv/range", map[string]any{"key": "Lw=="}, &rangeResp); err != nil {
		return 0, fmt.Errorf("compact: read current revision: %w", err)
	}
	rev, err := rangeResp.Header.Revision.Int64()
	if err != nil {
		return 0, fmt.Errorf("compact: parse revision %q: %w", rangeResp.Header.Revision, err)
	}
	// Record the compaction where kube-apiserver's own compactor does, so that
	// the API servers learn it (they watch this key) and drop list snapshots
	// older than rev, as after a compaction they did themselves.
	var putResp map[string]any
	put := map[string]any{"key": compactRevKey, "value": base64.StdEncoding.EncodeToString([]byte(strconv.FormatInt(rev, 10)))}
	if err := e.etcdCall(ctx, http.MethodPost, "/v3/kv/put", put, &putResp); err != nil {
		return 0, fmt.Errorf("compact: record revision %d: %w", rev, err)
	}
	var compactResp map[string]any
	body := map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}
	if err := e.etcdCall(ctx, http.MethodPost, "/v3/kv/compaction", body, &compactResp); err != nil {
		return 0, fmt.Errorf("compact at revision %d: %w", rev, err)
	}
	return rev, nil
}

// WriteKubeconfig writes a kubeconfig file with one context per cluster (all
// clusters if none are given), each named after its cluster, as are its cluster
// and user entries. The user is "admin" or one of Options.Users; the file holds
// that user's token and the server's CA data. The current context is the first
// cluster's.
func (e *Env) WriteKubeconfig(path string, user string, clusters ...*Cluster) error {
	token, ok := e.tokens[user]
	if !ok {
		return fmt.Errorf("write kubeconfig: unknown user %q", user)
	}
	if len(clusters) == 0 {
		clusters = e.clusters
	}
	cfg := clientcmdapi.NewConfig()
	for _, c := range clusters {
		cfg.Clusters[c.name] = &clientcmdapi.Cluster{Server: c.URL(), CertificateAuthorityData: c.caData}
		cfg.AuthInfos[c.name] = &clientcmdapi.AuthInfo{Token: token}
		cfg.Contexts[c.name] = &clientcmdapi.Context{Cluster: c.name, AuthInfo: c.name}
		if cfg.CurrentContext == "" {
			cfg.CurrentContext = c.name
		}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
