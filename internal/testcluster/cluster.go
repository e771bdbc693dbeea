package testcluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// clientQPS and clientBurst are raised far above client-go's 5/10 for test load.
	clientQPS   = 500
	clientBurst = 1000
	// grantTimeout bounds how long Grant waits for the authorizer to see a new binding.
	grantTimeout = 30 * time.Second
)

// bootstrapClusterRoles must exist before a cluster counts as ready.
var bootstrapClusterRoles = []string{"cluster-admin", "admin", "edit", "view", "system:basic-user"}

// grantSeq makes Grant's object names unique.
var grantSeq atomic.Int64

// Cluster is one kube-apiserver of an Env with its own etcd prefix.
type Cluster struct {
	env     *Env
	name    string
	prefix  string
	certDir string
	// noWatchCache: the API server runs with --watch-cache=false, so a watch
	// from a compacted resourceVersion gets 410 from etcd itself.
	noWatchCache bool

	// Set by the first start, then fixed: Restart reuses port and cert dir.
	port   int
	caData []byte

	mu   sync.Mutex // guards proc; held across Stop and Restart
	proc *process   // nil while stopped
}

// Name returns the cluster's name: "c1", "c2", ….
func (c *Cluster) Name() string { return c.name }

// URL returns the API server's address, https://127.0.0.1:PORT. It stays the
// same across Stop and Restart.
func (c *Cluster) URL() string { return serverURL(c.port) }

// AdminConfig returns a new rest.Config for user "admin" (group
// system:masters), verifying the server with its CA, with QPS and Burst raised
// for test load and no Timeout, so that watches are not cut.
func (c *Cluster) AdminConfig() *rest.Config {
	return c.UserConfig(adminUser)
}

// UserConfig returns a new rest.Config like AdminConfig, but for the given
// user, which is "admin" or one of Options.Users. It panics on an unknown user,
// a mistake in the test itself.
func (c *Cluster) UserConfig(user string) *rest.Config {
	return c.env.restConfig(c.port, c.caData, user)
}

// Grant gives user the rules: a Role and RoleBinding in namespace, or a
// ClusterRole and ClusterRoleBinding if namespace is "". It returns once the
// API server's authorizer allows the first verb of every rule, so the very
// next request of the user sees the grant. The namespace need not exist.
func (c *Cluster) Grant(ctx context.Context, user string, namespace string, rules ...rbacv1.PolicyRule) error {
	if len(rules) == 0 {
		return fmt.Errorf("grant to %q in cluster %q: no rules", user, c.name)
	}
	client, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		return fmt.Errorf("grant to %q in cluster %q: %w", user, c.name, err)
	}
	name := fmt.Sprintf("testcluster-grant-%s-%d", strings.ToLower(user), grantSeq.Add(1))
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	if namespace == "" {
		role := &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}
		if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("grant to %q in cluster %q: create cluster role: %w", user, c.name, err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: meta,
			Subjects:   subjects,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		}
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("grant to %q in cluster %q: create cluster role binding: %w", user, c.name, err)
		}
	} else {
		role := &rbacv1.Role{ObjectMeta: meta, Rules: rules}
		if _, err := client.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("grant to %q in cluster %q namespace %q: create role: %w", user, c.name, namespace, err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: meta,
			Subjects:   subjects,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		}
		if _, err := client.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("grant to %q in cluster %q namespace %q: create role binding: %w", user, c.name, namespace, err)
		}
	}
	if err := waitGranted(ctx, client, user, namespace, rules); err != nil {
		return fmt.Errorf("grant to %q in cluster %q: %w", user, c.name, err)
	}
	return nil
}

// waitGranted polls SubjectAccessReviews until the authorizer allows the first
// verb of each rule (RBAC's informers take a moment to see new bindings).
func waitGranted(ctx context.Context, client kubernetes.Interface, user, namespace string, rules []rbacv1.PolicyRule) error {
	ctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	var reviews []authorizationv1.SubjectAccessReviewSpec
	for _, r := range rules {
		if len(r.Verbs) == 0 {
			continue
		}
		spec := authorizationv1.SubjectAccessReviewSpec{User: user}
		switch {
		case len(r.NonResourceURLs) > 0:
			spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: r.NonResourceURLs[0], Verb: r.Verbs[0]}
		case len(r.Resources) > 0 && len(r.APIGroups) > 0:
			resource, subresource, _ := strings.Cut(r.Resources[0], "/")
			attrs := &authorizationv1.ResourceAttributes{
				Namespace:   namespace,
				Verb:        r.Verbs[0],
				Group:       r.APIGroups[0],
				Resource:    resource,
				Subresource: subresource,
			}
			if len(r.ResourceNames) > 0 {
				attrs.Name = r.ResourceNames[0]
			}
			spec.ResourceAttributes = attrs
		default:
			continue
		}
		reviews = append(reviews, spec)
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for _, spec := range reviews {
		for {
			review, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx,
				&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			if err == nil && review.Status.Allowed {
				break
			}
			select {
			case <-ctx.Done():
				if err == nil {
					err = fmt.Errorf("still denied: %s", review.Status.Reason)
				}
				return fmt.Errorf("wait until the grant takes effect: %w (%w)", err, ctx.Err())
			case <-ticker.C:
			}
		}
	}
	return nil
}

// Stop stops the API server, SIGTERM first and SIGKILL after a short grace,
// like an outage: clients get connection refused until Restart. Its data stays
// in etcd. Stopping a stopped cluster does nothing. It returns an error if the
// server had crashed before.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil
	}
	err := c.proc.stop()
	c.proc = nil
	if err != nil {
		return fmt.Errorf("stop cluster %q: %w", c.name, err)
	}
	return nil
}

// Restart starts the stopped (or crashed) API server again on the same port
// and with the same certificates, so existing configs keep working, and waits
// until it is ready. It fails if the server is running.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		if !c.proc.exited() {
			return fmt.Errorf("restart cluster %q: it is running", c.name)
		}
		c.proc = nil // it crashed; start it again
	}
	if c.env.isStopped() {
		return fmt.Errorf("restart cluster %q: the env is stopped", c.name)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var err error
	// The port was ours until Stop; if something else grabbed it meanwhile,
	// give it a few tries.
	for attempt := range portAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("restart cluster %q: %w", c.name, err)
			case <-time.After(time.Second):
			}
		}
		var p *process
		p, _, err = c.env.startAPIServer(ctx, c.name, c.prefix, c.port, c.certDir, c.noWatchCache)
		if err == nil {
			c.proc = p
			return nil
		}
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return fmt.Errorf("restart cluster %q: %w", c.name, err)
}

// startFirst starts the API server on a fresh port, for Start.
func (c *Cluster) startFirst(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, port, caData, err := c.env.startAPIServerOnFreePort(ctx, c.name, c.prefix, c.certDir, c.noWatchCache)
	if err != nil {
		return fmt.Errorf("start cluster %q: %w", c.name, err)
	}
	c.proc, c.port, c.caData = p, port, caData
	return nil
}

// Secondary is a second API server of a cluster: same etcd prefix, another
// port and its own serving certificate. Changes made through it are changes of
// the cluster, also while the cluster's main endpoint is stopped.
type Secondary struct {
	cluster *Cluster
	port    int
	caData  []byte

	mu   sync.Mutex
	proc *process // nil once stopped
}

// StartSecondary starts a Secondary of the cluster and waits until it is
// ready. Env.Stop stops it if the test does not.
func (c *Cluster) StartSecondary(ctx context.Context) (*Secondary, error) {
	e := c.env
	if e.isStopped() {
		return nil, fmt.Errorf("start secondary of cluster %q: the env is stopped", c.name)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	certDir, err := os.MkdirTemp(filepath.Join(e.dir, c.name), "secondary-")
	if err != nil {
		return nil, fmt.Errorf("start secondary of cluster %q: %w", c.name, err)
	}
	p, port, caData, err := e.startAPIServerOnFreePort(ctx, c.name+"-secondary", c.prefix, certDir, c.noWatchCache)
	if err != nil {
		return nil, fmt.Errorf("start secondary of cluster %q: %w", c.name, err)
	}
	s := &Secondary{cluster: c, port: port, caData: caData, proc: p}
	e.mu.Lock()
	if e.stopped { // Env.Stop ran meanwhile and will not see s.
		e.mu.Unlock()
		_ = s.stopProcess()
		return nil, fmt.Errorf("start secondary of cluster %q: the env is stopped", c.name)
	}
	e.secondaries = append(e.secondaries, s)
	e.mu.Unlock()
	return s, nil
}

// URL returns the secondary's address, https://127.0.0.1:PORT.
func (s *Secondary) URL() string { return serverURL(s.port) }

// AdminConfig returns a new rest.Config for user "admin" on the secondary,
// like Cluster.AdminConfig.
func (s *Secondary) AdminConfig() *rest.Config {
	return s.cluster.env.restConfig(s.port, s.caData, adminUser)
}

// Stop stops the secondary. It is idempotent and returns an error if the
// secondary had crashed before.
func (s *Secondary) Stop() error {
	e := s.cluster.env
	e.mu.Lock()
	e.secondaries = slices.DeleteFunc(e.secondaries, func(x *Secondary) bool { return x == s })
	e.mu.Unlock()
	if err := s.stopProcess(); err != nil {
		return fmt.Errorf("stop secondary of cluster %q: %w", s.cluster.name, err)
	}
	return nil
}

// stopProcess stops the secondary's process, once.
func (s *Secondary) stopProcess() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	err := s.proc.stop()
	s.proc = nil
	return err
}

// isStopped reports whether Env.Stop has begun.
func (e *Env) isStopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
}

// serverURL is the address of an API server on port.
func serverURL(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) }

// restConfig builds a rest.Config for user on the API server at port.
func (e *Env) restConfig(port int, caData []byte, user string) *rest.Config {
	token, ok := e.tokens[user]
	if !ok {
		panic(fmt.Sprintf("testcluster: unknown user %q", user))
	}
	return &rest.Config{
		Host:            serverURL(port),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: slices.Clone(caData)},
		QPS:             clientQPS,
		Burst:           clientBurst,
	}
}

// startAPIServerOnFreePort starts an API server on a fresh port, retrying
// when the port is taken before the server binds it.
func (e *Env) startAPIServerOnFreePort(ctx context.Context, name, prefix, certDir string, noWatchCache bool) (*process, int, []byte, error) {
	var err error
	for range portAttempts {
		var port int
		port, err = freePort()
		if err != nil {
			return nil, 0, nil, err
		}
		var p *process
		var caData []byte
		p, caData, err = e.startAPIServer(ctx, name, prefix, port, certDir, noWatchCache)
		if err == nil {
			return p, port, caData, nil
		}
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, 0, nil, err
}

// startAPIServer starts one kube-apiserver and waits until it is ready:
// /readyz ok, namespace "default" and the bootstrap cluster roles exist.
// It returns the CA that verifies the server's certificate.
func (e *Env) startAPIServer(ctx context.Context, name, prefix string, port int, certDir string, noWatchCache bool) (*process, []byte, error) {
	args := []string{
		"--etcd-servers", e.etcdURL,
		"--etcd-prefix", prefix,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--cert-dir", certDir,
		"--token-auth-file", e.tokenFile,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", e.saKeyFile,
		"--service-account-signing-key-file", e.saKeyFile,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--disable-admission-plugins", "ServiceAccount",
	}
	if noWatchCache {
		args = append(args, "--watch-cache=false")
	}
	p, err := startProcess("kube-apiserver "+name, e.bins.apiserver, args, e.logPath(name+"-apiserver"))
	if err != nil {
		return nil, nil, err
	}
	var (
		caData []byte
		client kubernetes.Interface
	)
	err = waitReady(ctx, p, func(ctx context.Context) (bool, error) {
		if client == nil {
			// The server writes its self-signed certificate before it listens.
			ca, err := readServingCA(filepath.Join(certDir, "apiserver.crt"))
			if err != nil {
				return false, err
			}
			c, err := kubernetes.NewForConfig(e.restConfig(port, ca, adminUser))
			if err != nil {
				return false, err
			}
			caData, client = ca, c
		}
		return apiServerReady(ctx, client)
	})
	if err != nil {
		_ = p.stop()
		return nil, nil, err
	}
	return p, caData, nil
}

// apiServerReady reports whether /readyz is ok and the objects the bootstrap
// controllers create exist.
func apiServerReady(ctx context.Context, client kubernetes.Interface) (bool, error) {
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return false, fmt.Errorf("readyz: %w: %s", err, body)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		return false, fmt.Errorf("get namespace default: %w", err)
	}
	for _, role := range bootstrapClusterRoles {
		if _, err := client.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); err != nil {
			return false, fmt.Errorf("get cluster role %s: %w", role, err)
		}
	}
	return true, nil
}

// readServingCA returns, PEM-encoded, the CA certificate of the chain that
// kube-apiserver writes to <cert-dir>/apiserver.crt when it generates its
// self-signed serving certificate (leaf first, then its CA).
func readServingCA(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("no CA certificate in %s (yet)", path)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate in %s: %w", path, err)
		}
		if cert.IsCA {
			return pem.EncodeToMemory(block), nil
		}
	}
}
