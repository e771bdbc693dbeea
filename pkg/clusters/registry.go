package clusters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Errors that Registry methods wrap; test for them with errors.Is.
var (
	// ErrExists means a cluster of that name is already registered.
	ErrExists = errors.New("cluster already registered")
	// ErrNotFound means no cluster of that name is registered.
	ErrNotFound = errors.New("cluster not registered")
	// ErrStopped means the registry stopped: the context given to Start has
	// ended, so the registry takes no changes any more.
	ErrStopped = errors.New("registry stopped")
)

// Runner runs the ingestion of one cluster. It is declared here, where it is
// consumed; the Registry calls it from one goroutine per cluster and never
// while holding its own lock.
//
// A Runner may call Get and Names from its methods, but not Set, nor Add,
// Update or Remove of the cluster it is running or forgetting: those wait for
// that very call to return.
type Runner interface {
	// RunCluster runs the cluster until ctx ends. It returns nil after ctx
	// ends; an error returned earlier is logged and the registry runs the
	// cluster again after a backoff (see Options). So does a nil returned
	// before ctx ends. ctx carries a logger with the cluster's name
	// (klog.FromContext). c.Config is the runner's own copy.
	RunCluster(ctx context.Context, c Cluster) error
	// ForgetCluster drops everything held for a cluster that was removed; it
	// is called after its RunCluster returned. It is not called when a
	// cluster is updated or when the registry stops.
	ForgetCluster(name string)
}

// Options configures a Registry. The zero value is ready to use; each field's
// comment states its default.
type Options struct {
	// Logger receives the registry's log lines; RunCluster finds it, with a
	// "cluster" key added, in its ctx. Default (a Logger without sink, such as
	// the zero value): klog.FromContext of the ctx passed to Start, which is
	// klog.Background() unless the caller attached a logger. To silence the
	// registry, attach logr.Discard() to that ctx.
	Logger klog.Logger
	// MinRestartBackoff is the wait before the registry runs a cluster again
	// whose RunCluster failed; each further failure in a row doubles it, and
	// each wait is randomly shortened by up to a tenth so that clusters that
	// fail together do not retry together. Default: 1s.
	MinRestartBackoff time.Duration
	// MaxRestartBackoff caps the wait between runs of a failing cluster. A
	// run that lasted at least this long before failing starts again from
	// MinRestartBackoff. Default: 1m, and never less than MinRestartBackoff.
	MaxRestartBackoff time.Duration
}

func (o Options) withDefaults() Options {
	if o.MinRestartBackoff <= 0 {
		o.MinRestartBackoff = time.Second
	}
	if o.MaxRestartBackoff <= 0 {
		o.MaxRestartBackoff = time.Minute
	}
	o.MaxRestartBackoff = max(o.MaxRestartBackoff, o.MinRestartBackoff)
	// Logger needs the ctx of Start; Start fills it in.
	return o
}

type state int

const (
	stateNew state = iota
	stateRunning
	stateStopped
)

// Registry holds the clusters by name and runs each one, through a Runner, in
// a goroutine of its own with a cancel function of its own. Its methods are
// safe for concurrent use. Operations on one name are serialized; operations on
// different names do not wait for each other, except that Set calls wait for
// each other.
type Registry struct {
	runner Runner
	opts   Options

	setMu sync.Mutex // serializes Set calls

	mu       sync.Mutex
	state    state
	ctx      context.Context // Start's ctx, parent of every run; set by Start
	logger   klog.Logger     // set by Start
	clusters map[string]*entry
	// busy holds the names that an Add, Update or Remove is working on; the
	// channel is closed when it is done. See lockName.
	busy map[string]chan struct{}
	// runs counts the cluster goroutines; Start waits for it. runs.Go is
	// only called with mu held and in stateRunning, so never once Start waits.
	runs sync.WaitGroup
}

// entry is one registered cluster.
type entry struct {
	cluster Cluster // Config is never modified, only replaced
	run     *run    // nil while not running
}

// run is one goroutine running a cluster.
type run struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
}

// NewRegistry returns an empty Registry that runs clusters through r once
// Start is called. It panics if r is nil.
func NewRegistry(r Runner, opts Options) *Registry {
	if r == nil {
		panic("clusters: NewRegistry called with a nil Runner")
	}
	return &Registry{
		runner:   r,
		opts:     opts.withDefaults(),
		clusters: make(map[string]*entry),
		busy:     make(map[string]chan struct{}),
	}
}

// Start runs every registered cluster, including those added before Start, and
// every cluster added later. When ctx ends it stops them all and returns nil
// after every cluster goroutine has returned. Once ctx has ended the registry
// takes no changes: Add, Update, Remove and Set return ErrStopped. Start may
// be called once; it does not call ForgetCluster.
func (r *Registry) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.state != stateNew {
		r.mu.Unlock()
		return errors.New("registry already started")
	}
	r.state = stateRunning
	r.ctx = ctx
	r.logger = r.opts.Logger
	if r.logger.GetSink() == nil {
		r.logger = klog.FromContext(ctx)
	}
	logger := r.logger
	for _, name := range slices.Sorted(maps.Keys(r.clusters)) {
		r.startLocked(r.clusters[name])
	}
	n := len(r.clusters)
	r.mu.Unlock()

	logger.Info("Cluster registry started", "clusters", n)
	<-ctx.Done()

	r.mu.Lock()
	r.state = stateStopped
	r.mu.Unlock()
	logger.Info("Cluster registry stopping, waiting for clusters")
	r.runs.Wait()
	logger.Info("Cluster registry stopped")
	return nil
}

// Add registers c and, if the registry is running, starts it. It returns an
// error naming the cluster if a cluster of that name is registered
// (ErrExists), once the registry stopped (ErrStopped), or if c is invalid: a name
// that is empty, longer than 253 bytes, or holds white space or unprintable
// characters; a nil Config; an empty or unparsable Config.Host. Other clusters
// are unaffected either way. Add keeps its own copy of c.Config.
func (r *Registry) Add(c Cluster) error {
	if err := validate(c); err != nil {
		return fmt.Errorf("add cluster %q: %w", c.Name, err)
	}
	c.Config = copyConfig(c.Config)
	unlock := r.lockName(c.Name)
	defer unlock()
	return r.addNameLocked(c)
}

// Update replaces the Config of the registered cluster c.Name. If the new
// Config reaches the cluster differently (another Host or APIPath, proxy,
// bearer token or token file, basic auth, TLS settings such as CA, client
// certificate and key as data or file names, Insecure or ServerName,
// impersonation, exec plugin, or auth provider name), Update cancels the
// cluster's run, waits for RunCluster to return and starts a new run with the
// new Config, without ForgetCluster in between: the runner keeps its data and
// reconciles it. Otherwise Update does nothing and the old Config stays; that
// includes changes to client-side tuning only (QPS, Burst, UserAgent, Timeout,
// ...) and a new bearer token read from an unchanged token file, which
// client-go re-reads by itself. Update returns an error naming the cluster if
// it is not registered (ErrNotFound), once the registry stopped (ErrStopped)
// or if c is invalid (see Add).
func (r *Registry) Update(c Cluster) error {
	if err := validate(c); err != nil {
		return fmt.Errorf("update cluster %q: %w", c.Name, err)
	}
	c.Config = copyConfig(c.Config)
	unlock := r.lockName(c.Name)
	defer unlock()
	return r.updateNameLocked(c)
}

// Remove unregisters the named cluster: it cancels its run, waits for
// RunCluster to return and then calls ForgetCluster. Remove calls ForgetCluster
// also for a cluster that never ran. It returns an error naming the cluster if
// it is not registered (ErrNotFound) or once the registry stopped (ErrStopped).
func (r *Registry) Remove(name string) error {
	unlock := r.lockName(name)
	defer unlock()
	return r.removeNameLocked(name)
}

// Set makes the registry hold exactly cs: it adds the clusters it does not
// hold, updates those whose Config changed (see Update) and removes those not
// in cs (see Remove), working on different clusters concurrently. It returns
// after every change is done.
//
// A bad entry does not stop the others: Set returns an error joining one error
// per bad entry, each naming the cluster. An invalid entry or a second entry
// of the same name is skipped; if its name is registered, that cluster stays
// as it is rather than being removed. Changes that other calls make while Set
// runs may interleave with it.
func (r *Registry) Set(cs []Cluster) error {
	r.setMu.Lock()
	defer r.setMu.Unlock()
	if r.stopped() {
		return fmt.Errorf("set clusters: %w", ErrStopped)
	}

	var (
		errs []error
		keep = make(map[string]bool, len(cs)) // names in cs, valid or not
		put  []Cluster
	)
	for i, c := range cs {
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("set cluster at index %d: empty name", i))
			continue
		}
		if keep[c.Name] {
			errs = append(errs, fmt.Errorf("set cluster %q: listed more than once", c.Name))
			continue
		}
		keep[c.Name] = true
		if err := validate(c); err != nil {
			errs = append(errs, fmt.Errorf("set cluster %q: %w", c.Name, err))
			continue
		}
		put = append(put, Cluster{Name: c.Name, Config: copyConfig(c.Config)})
	}
	var remove []string
	for _, name := range r.Names() {
		if !keep[name] {
			remove = append(remove, name)
		}
	}

	opErrs := make([]error, len(remove)+len(put))
	var wg sync.WaitGroup
	for i, name := range remove {
		wg.Go(func() {
			unlock := r.lockName(name)
			defer unlock()
			if err := r.removeNameLocked(name); !errors.Is(err, ErrNotFound) {
				opErrs[i] = err
			}
		})
	}
	for i, c := range put {
		wg.Go(func() {
			unlock := r.lockName(c.Name)
			defer unlock()
			r.mu.Lock()
			_, exists := r.clusters[c.Name]
			r.mu.Unlock()
			if exists {
				opErrs[len(remove)+i] = r.updateNameLocked(c)
			} else {
				opErrs[len(remove)+i] = r.addNameLocked(c)
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, opErrs...)...)
}

// Get returns the named cluster, with a copy of its Config, and whether it is
// registered.
func (r *Registry) Get(name string) (Cluster, bool) {
	r.mu.Lock()
	e, ok := r.clusters[name]
	var c Cluster
	if ok {
		c = e.cluster
	}
	r.mu.Unlock()
	if !ok {
		return Cluster{}, false
	}
	c.Config = copyConfig(c.Config)
	return c, true
}

// ClusterConfig returns a copy of the named cluster's Config, for clients
// that talk to the cluster beside its cache (access reviews).
func (r *Registry) ClusterConfig(name string) (*rest.Config, bool) {
	c, ok := r.Get(name)
	return c.Config, ok
}

// Names returns the names of the registered clusters, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.clusters))
}

func (r *Registry) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == stateStopped
}

// lockName waits until no other Add, Update or Remove works on name and then
// reserves it; the returned func releases it. This keeps, for example, an Add
// from starting a cluster of the same name before a Remove has called
// ForgetCluster, while operations on other names go on. lockName must not be
// called with mu held.
func (r *Registry) lockName(name string) (unlock func()) {
	for {
		r.mu.Lock()
		wait, busy := r.busy[name]
		if !busy {
			done := make(chan struct{})
			r.busy[name] = done
			r.mu.Unlock()
			return func() {
				r.mu.Lock()
				delete(r.busy, name)
				r.mu.Unlock()
				close(done)
			}
		}
		r.mu.Unlock()
		<-wait
	}
}

// addNameLocked adds the valid cluster c, whose Config the registry owns. The
// caller holds c.Name's name lock (lockName), not mu.
func (r *Registry) addNameLocked(c Cluster) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == stateStopped {
		return fmt.Errorf("add cluster %q: %w", c.Name, ErrStopped)
	}
	if _, ok := r.clusters[c.Name]; ok {
		return fmt.Errorf("add cluster %q: %w", c.Name, ErrExists)
	}
	e := &entry{cluster: c}
	r.clusters[c.Name] = e
	if r.state == stateRunning {
		r.startLocked(e)
	}
	return nil
}

// updateNameLocked updates the registered cluster c.Name to the valid c, whose
// Config the registry owns. The caller holds c.Name's name lock, not mu.
func (r *Registry) updateNameLocked(c Cluster) error {
	r.mu.Lock()
	e, ok := r.clusters[c.Name]
	switch {
	case r.state == stateStopped:
		r.mu.Unlock()
		return fmt.Errorf("update cluster %q: %w", c.Name, ErrStopped)
	case !ok:
		r.mu.Unlock()
		return fmt.Errorf("update cluster %q: %w", c.Name, ErrNotFound)
	case equivalent(e.cluster.Config, c.Config):
		r.mu.Unlock()
		return nil
	}
	e.cluster = c
	old := e.run
	e.run = nil
	logger := r.logger
	r.mu.Unlock()

	if old != nil {
		logger.Info("Restarting cluster with new config", "cluster", c.Name)
		old.cancel()
		<-old.done
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	// The name lock kept everyone else from this entry, but Start may have
	// started it meanwhile (only if old was nil), or the registry stopped.
	if r.state == stateRunning && e.run == nil {
		r.startLocked(e)
	}
	return nil
}

// removeNameLocked removes the named cluster. The caller holds the name lock,
// not mu.
func (r *Registry) removeNameLocked(name string) error {
	r.mu.Lock()
	e, ok := r.clusters[name]
	switch {
	case r.state == stateStopped:
		r.mu.Unlock()
		return fmt.Errorf("remove cluster %q: %w", name, ErrStopped)
	case !ok:
		r.mu.Unlock()
		return fmt.Errorf("remove cluster %q: %w", name, ErrNotFound)
	}
	delete(r.clusters, name)
	old := e.run
	e.run = nil
	logger := r.logger
	r.mu.Unlock()

	if old != nil {
		old.cancel()
		<-old.done
	}
	r.runner.ForgetCluster(name)
	logger.Info("Cluster removed", "cluster", name)
	return nil
}

// startLocked starts a goroutine running e's cluster. The caller holds mu and
// the registry is running.
func (r *Registry) startLocked(e *entry) {
	c := e.cluster
	ctx, cancel := context.WithCancel(r.ctx)
	ctx = klog.NewContext(ctx, r.logger.WithValues("cluster", c.Name))
	run := &run{cancel: cancel, done: make(chan struct{})}
	e.run = run
	r.runs.Go(func() {
		defer close(run.done)
		defer cancel()
		r.runUntilDone(ctx, c)
	})
}

// runUntilDone calls RunCluster until ctx ends, waiting a backoff after each
// failure.
func (r *Registry) runUntilDone(ctx context.Context, c Cluster) {
	logger := klog.FromContext(ctx)
	logger.Info("Cluster starting", "host", c.Config.Host)
	defer logger.Info("Cluster stopped")
	failures := 0
	for {
		began := time.Now()
		err := r.runner.RunCluster(ctx, Cluster{Name: c.Name, Config: copyConfig(c.Config)})
		if ctx.Err() != nil {
			if err != nil && !errors.Is(err, context.Canceled) {
				logger.Error(err, "Cluster run failed while stopping")
			}
			return
		}
		if err == nil {
			err = errors.New("run returned before its context ended")
		}
		if time.Since(began) >= r.opts.MaxRestartBackoff {
			failures = 0
		}
		delay := r.backoff(failures)
		failures++
		logger.Error(err, "Cluster run failed, restarting after backoff", "failures", failures, "backoff", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// backoff returns the wait after the given number of earlier failures in a row:
// MinRestartBackoff doubled that many times, capped at MaxRestartBackoff, less
// up to a tenth at random.
func (r *Registry) backoff(failures int) time.Duration {
	d := r.opts.MinRestartBackoff
	for i := 0; i < failures && d < r.opts.MaxRestartBackoff; i++ {
		d *= 2
	}
	d = min(d, r.opts.MaxRestartBackoff)
	if j := d / 10; j > 0 {
		d -= rand.N(j)
	}
	return d
}
