package clusters

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// fakeRunner records calls per cluster. RunCluster blocks until its ctx ends,
// except for the first fail[name] runs, which fail at once, and runs that the
// test holds up in stopping (hold).
type fakeRunner struct {
	mu       sync.Mutex
	events   map[string][]string // per cluster: "run <host>", "fail", "stop", "forget"
	running  map[string]int
	fail     map[string]int
	early    map[string]int // runs that return nil at once
	hold     chan struct{}  // if non-nil, RunCluster waits for it after ctx ends
	held     int            // runs waiting for hold
	problems []string       // broken invariants
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{
		events:  make(map[string][]string),
		running: make(map[string]int),
		fail:    make(map[string]int),
		early:   make(map[string]int),
	}
}

func (f *fakeRunner) RunCluster(ctx context.Context, c Cluster) error {
	f.mu.Lock()
	f.events[c.Name] = append(f.events[c.Name], "run "+c.Config.Host)
	f.running[c.Name]++
	if f.running[c.Name] > 1 {
		f.problems = append(f.problems, fmt.Sprintf("%s: %d runs at once", c.Name, f.running[c.Name]))
	}
	fail, early, hold := f.fail[c.Name] > 0, f.early[c.Name] > 0, f.hold
	if fail {
		f.fail[c.Name]--
	}
	if early {
		f.early[c.Name]--
	}
	f.mu.Unlock()

	// Hand the runner a config it may scribble on.
	c.Config.Host = "scribbled"
	klog.FromContext(ctx).Info("Running")

	var err error
	switch {
	case fail:
		err = errors.New("boom")
	case early:
	default:
		<-ctx.Done()
		if hold != nil {
			f.mu.Lock()
			f.held++
			f.mu.Unlock()
			<-hold
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[c.Name]--
	if err != nil {
		f.events[c.Name] = append(f.events[c.Name], "fail")
	} else {
		f.events[c.Name] = append(f.events[c.Name], "stop")
	}
	return err
}

func (f *fakeRunner) ForgetCluster(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[name] != 0 {
		f.problems = append(f.problems, fmt.Sprintf("%s: forgotten while running", name))
	}
	f.events[name] = append(f.events[name], "forget")
}

// Events returns a copy of the events, by cluster.
func (f *fakeRunner) Events() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]string, len(f.events))
	for k, v := range f.events {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Running reports whether name has a RunCluster call blocked on its ctx.
func (f *fakeRunner) Running(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs := f.events[name]
	return f.running[name] > 0 && len(evs) > 0 && strings.HasPrefix(evs[len(evs)-1], "run ")
}

func (f *fakeRunner) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Error(p)
	}
}

// eventually polls cond until it holds, failing the test after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func cluster(name, host string) Cluster {
	return Cluster{Name: name, Config: &rest.Config{Host: host, BearerToken: "t"}}
}

// start runs reg.Start in a goroutine. stop cancels it and returns Start's
// result once it returned; the test's cleanup calls it too.
func start(t *testing.T, reg *Registry) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- reg.Start(ctx) }()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() { _ = stop() })
	return stop
}

// testContext is t.Context() with a logger that writes to t.Log.
func testContext(t *testing.T) context.Context {
	logger, _ := ktesting.NewTestContext(t)
	return klog.NewContext(t.Context(), logger)
}

// testOptions keeps restarts fast.
var testOptions = Options{MinRestartBackoff: time.Millisecond, MaxRestartBackoff: 4 * time.Millisecond}

func TestRegistryStartStop(t *testing.T) {
	f := newFakeRunner()
	reg := NewRegistry(f, testOptions)
	for _, c := range []Cluster{cluster("a", "https://a"), cluster("b", "https://b")} {
		if err := reg.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(map[string][]string{}, f.Events()); diff != "" {
		t.Errorf("ran before Start (-want +got):\n%s", diff)
	}
	stop := start(t, reg)
	eventually(t, "a and b running", func() bool { return f.Running("a") && f.Running("b") })
	if err := reg.Add(cluster("c", "https://c")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c running", func() bool { return f.Running("c") })
	if err := stop(); err != nil {
		t.Errorf("Start() = %v", err)
	}
	// Start has returned, so every run must have returned.
	want := map[string][]string{
		"a": {"run https://a", "stop"},
		"b": {"run https://b", "stop"},
		"c": {"run https://c", "stop"},
	}
	if diff := cmp.Diff(want, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	f.check(t)

	if err := reg.Start(t.Context()); err == nil {
		t.Error("second Start() succeeded")
	}
	for op, err := range map[string]error{
		"Add":    reg.Add(cluster("d", "https://d")),
		"Update": reg.Update(cluster("a", "https://a2")),
		"Remove": reg.Remove("a"),
		"Set":    reg.Set(nil),
	} {
		if !errors.Is(err, ErrStopped) {
			t.Errorf("%s after Start returned: %v, want ErrStopped", op, err)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
}

func TestRegistryStartWaitsForAll(t *testing.T) {
	f := newFakeRunner()
	f.hold = make(chan struct{})
	reg := NewRegistry(f, testOptions)
	for _, name := range []string{"a", "b"} {
		if err := reg.Add(cluster(name, "https://"+name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	release := sync.OnceFunc(func() { close(f.hold) })
	t.Cleanup(release)
	done := make(chan error, 1)
	go func() { done <- reg.Start(ctx) }()
	eventually(t, "a and b running", func() bool { return f.Running("a") && f.Running("b") })
	cancel()
	// Both runs are now held in RunCluster after their ctx ended.
	eventually(t, "runs cancelled and held", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.held == 2
	})
	select {
	case err := <-done:
		t.Fatalf("Start returned %v while runs were still going", err)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Errorf("Start() = %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if diff := cmp.Diff(map[string]int{"a": 0, "b": 0}, f.running); diff != "" {
		t.Errorf("running after Start returned (-want +got):\n%s", diff)
	}
}

func TestRegistryAddErrors(t *testing.T) {
	tests := []struct {
		name    string
		c       Cluster
		wantErr []string
		is      error
	}{
		{name: "duplicate", c: cluster("a", "https://other"), wantErr: []string{`add cluster "a"`}, is: ErrExists},
		{name: "empty name", c: cluster("", "https://x"), wantErr: []string{`add cluster ""`, "empty name"}},
		{name: "white space in name", c: cluster("a b", "https://x"), wantErr: []string{`add cluster "a b"`, "name contains ' '"}},
		{name: "control character in name", c: cluster("a\nb", "https://x"), wantErr: []string{`name contains '\n'`}},
		{name: "long name", c: cluster(strings.Repeat("x", 254), "https://x"), wantErr: []string{"longer than 253"}},
		{name: "invalid UTF-8", c: cluster("a\xffb", "https://x"), wantErr: []string{"not valid UTF-8"}},
		{name: "nil config", c: Cluster{Name: "n"}, wantErr: []string{`add cluster "n"`, "nil config"}},
		{name: "empty host", c: cluster("h", ""), wantErr: []string{`add cluster "h"`, "empty host"}},
		{name: "host with path but no scheme", c: cluster("h", "x/path"), wantErr: []string{`add cluster "h"`, "invalid host"}},
		{name: "unparsable host", c: cluster("h", "https://[::1"), wantErr: []string{`add cluster "h"`, "invalid host"}},
	}
	f := newFakeRunner()
	reg := NewRegistry(f, testOptions)
	start(t, reg)
	if err := reg.Add(cluster("a", "https://a")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a running", func() bool { return f.Running("a") })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := reg.Add(tt.c)
			checkErr(t, err, tt.wantErr)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
	if diff := cmp.Diff(map[string][]string{"a": {"run https://a"}}, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if c, _ := reg.Get("a"); c.Config.Host != "https://a" {
		t.Errorf("a has host %q after failed Adds", c.Config.Host)
	}
	f.check(t)
}

func TestRegistryUpdate(t *testing.T) {
	base := func() *rest.Config {
		return &rest.Config{
			Host:            "https://a",
			BearerToken:     "token",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")},
			QPS:             5,
		}
	}
	tests := []struct {
		name   string
		change func(*rest.Config)
		want   []string
	}{
		{
			name:   "new host restarts without forget",
			change: func(c *rest.Config) { c.Host = "https://a2" },
			want:   []string{"run https://a", "stop", "run https://a2"},
		},
		{
			name:   "new token restarts",
			change: func(c *rest.Config) { c.BearerToken = "token2" },
			want:   []string{"run https://a", "stop", "run https://a"},
		},
		{
			name:   "new CA restarts",
			change: func(c *rest.Config) { c.CAData = []byte("ca2") },
			want:   []string{"run https://a", "stop", "run https://a"},
		},
		{
			name:   "equivalent config is a no-op",
			change: func(c *rest.Config) { c.QPS = 50; c.UserAgent = "other"; c.Timeout = time.Second },
			want:   []string{"run https://a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeRunner()
			reg := NewRegistry(f, testOptions)
			if err := reg.Add(Cluster{Name: "a", Config: base()}); err != nil {
				t.Fatal(err)
			}
			start(t, reg)
			eventually(t, "a running", func() bool { return f.Running("a") })
			cfg := base()
			tt.change(cfg)
			if err := reg.Update(Cluster{Name: "a", Config: cfg}); err != nil {
				t.Fatal(err)
			}
			// Update returns after the new run started; wait for it to be called.
			eventually(t, "a running", func() bool { return len(f.Events()["a"]) == len(tt.want) })
			if diff := cmp.Diff(map[string][]string{"a": tt.want}, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			f.check(t)
		})
	}
}

func TestRegistryUpdateErrors(t *testing.T) {
	reg := NewRegistry(newFakeRunner(), testOptions)
	if err := reg.Add(cluster("a", "https://a")); err != nil {
		t.Fatal(err)
	}
	err := reg.Update(cluster("b", "https://b"))
	checkErr(t, err, []string{`update cluster "b"`})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Update(unknown) = %v, want ErrNotFound", err)
	}
	checkErr(t, reg.Update(Cluster{Name: "a"}), []string{`update cluster "a"`, "nil config"})
}

func TestRegistryUpdateBeforeStart(t *testing.T) {
	f := newFakeRunner()
	reg := NewRegistry(f, testOptions)
	if err := reg.Add(cluster("a", "https://a")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Update(cluster("a", "https://a2")); err != nil {
		t.Fatal(err)
	}
	start(t, reg)
	eventually(t, "a running", func() bool { return f.Running("a") })
	if diff := cmp.Diff(map[string][]string{"a": {"run https://a2"}}, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRegistryRemove(t *testing.T) {
	f := newFakeRunner()
	reg := NewRegistry(f, testOptions)
	if err := reg.Add(cluster("early", "https://early")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Remove("early"); err != nil {
		t.Fatal(err)
	}
	start(t, reg)
	for _, name := range []string{"a", "b"} {
		if err := reg.Add(cluster(name, "https://"+name)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a and b running", func() bool { return f.Running("a") && f.Running("b") })
	if err := reg.Remove("a"); err != nil {
		t.Fatal(err)
	}
	// Remove returned, so the run has returned and the runner forgot a.
	want := map[string][]string{
		"early": {"forget"},
		"a":     {"run https://a", "stop", "forget"},
		"b":     {"run https://b"},
	}
	if diff := cmp.Diff(want, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b"}, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if _, ok := reg.Get("a"); ok {
		t.Error("Get(a) found a removed cluster")
	}
	err := reg.Remove("a")
	checkErr(t, err, []string{`remove cluster "a"`})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove(unknown) = %v, want ErrNotFound", err)
	}
	f.check(t)
}

// TestRegistryRemoveWaits checks that Remove returns only after RunCluster
// returned, and that an Add of the same name waits for the Remove.
func TestRegistryRemoveWaits(t *testing.T) {
	f := newFakeRunner()
	hold := make(chan struct{})
	f.hold = hold // runs started from now on wait for hold after their ctx ended
	release := sync.OnceFunc(func() { close(hold) })
	reg := NewRegistry(f, testOptions)
	start(t, reg)
	t.Cleanup(release) // runs before the registry stops
	if err := reg.Add(cluster("a", "https://a")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a running", func() bool { return f.Running("a") })
	f.mu.Lock()
	f.hold = nil
	f.mu.Unlock()

	removed := make(chan error, 1)
	go func() { removed <- reg.Remove("a") }()
	eventually(t, "a unregistered", func() bool {
		_, ok := reg.Get("a")
		return !ok
	})
	added := make(chan error, 1)
	go func() { added <- reg.Add(cluster("a", "https://a2")) }()
	// The first run is held, so neither call can have returned.
	select {
	case err := <-removed:
		t.Fatalf("Remove returned %v while RunCluster was still going", err)
	case err := <-added:
		t.Fatalf("Add returned %v while Remove was still going", err)
	default:
	}
	release()
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	eventually(t, "a running again", func() bool { return f.Running("a") })
	want := map[string][]string{"a": {"run https://a", "stop", "forget", "run https://a2"}}
	if diff := cmp.Diff(want, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	f.check(t)
}

func TestRegistrySet(t *testing.T) {
	tests := []struct {
		name       string
		set        []Cluster
		wantEvents map[string][]string
		wantNames  []string
		wantErr    []string
	}{
		{
			name: "add, update, keep and remove",
			set: []Cluster{
				cluster("keep", "https://keep"),
				cluster("change", "https://change2"),
				cluster("new", "https://new"),
			},
			wantEvents: map[string][]string{
				"keep":   {"run https://keep"},
				"change": {"run https://change", "stop", "run https://change2"},
				"gone":   {"run https://gone", "stop", "forget"},
				"new":    {"run https://new"},
			},
			wantNames: []string{"change", "keep", "new"},
		},
		{
			name: "bad entries do not stop the others",
			set: []Cluster{
				cluster("keep", "https://keep"),
				{Name: "change"}, // invalid: change stays as it was
				cluster("", "https://x"),
				cluster("new", "https://new"),
				cluster("new", "https://new-again"),
				cluster("bad name", "https://x"),
			},
			wantEvents: map[string][]string{
				"keep":   {"run https://keep"},
				"change": {"run https://change"},
				"gone":   {"run https://gone", "stop", "forget"},
				"new":    {"run https://new"},
			},
			wantNames: []string{"change", "keep", "new"},
			wantErr: []string{
				`set cluster "change": nil config`,
				"set cluster at index 2: empty name",
				`set cluster "new": listed more than once`,
				`set cluster "bad name": name contains ' '`,
			},
		},
		{
			name: "empty set removes everything",
			set:  nil,
			wantEvents: map[string][]string{
				"keep":   {"run https://keep", "stop", "forget"},
				"change": {"run https://change", "stop", "forget"},
				"gone":   {"run https://gone", "stop", "forget"},
			},
			wantNames: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeRunner()
			reg := NewRegistry(f, testOptions)
			start(t, reg)
			initial := []Cluster{cluster("keep", "https://keep"), cluster("change", "https://change"), cluster("gone", "https://gone")}
			if err := reg.Set(initial); err != nil {
				t.Fatal(err)
			}
			eventually(t, "initial clusters running", func() bool {
				return f.Running("keep") && f.Running("change") && f.Running("gone")
			})
			checkErr(t, reg.Set(tt.set), tt.wantErr)
			for _, name := range tt.wantNames {
				eventually(t, name+" running", func() bool { return f.Running(name) })
			}
			if diff := cmp.Diff(tt.wantEvents, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNames, reg.Names(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Names() (-want +got):\n%s", diff)
			}
			f.check(t)
		})
	}
}

func TestRegistryRestartAfterError(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fakeRunner)
		want  []string
	}{
		{
			name:  "errors",
			setup: func(f *fakeRunner) { f.fail["a"] = 3 },
			want:  []string{"run https://a", "fail", "run https://a", "fail", "run https://a", "fail", "run https://a"},
		},
		{
			name:  "nil before ctx ended",
			setup: func(f *fakeRunner) { f.early["a"] = 2 },
			want:  []string{"run https://a", "stop", "run https://a", "stop", "run https://a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeRunner()
			tt.setup(f)
			reg := NewRegistry(f, testOptions)
			if err := reg.Add(cluster("a", "https://a")); err != nil {
				t.Fatal(err)
			}
			start(t, reg)
			eventually(t, "a running after failures", func() bool { return len(f.Events()["a"]) == len(tt.want) && f.Running("a") })
			if diff := cmp.Diff(map[string][]string{"a": tt.want}, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			f.check(t)
		})
	}
}

// TestRegistryStopDuringBackoff checks that a cluster waiting to restart stops
// at once when removed.
func TestRegistryStopDuringBackoff(t *testing.T) {
	f := newFakeRunner()
	f.fail["a"] = 1
	reg := NewRegistry(f, Options{MinRestartBackoff: time.Hour})
	start(t, reg)
	if err := reg.Add(cluster("a", "https://a")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a failed", func() bool { return len(f.Events()["a"]) == 2 })
	if err := reg.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"a": {"run https://a", "fail", "forget"}}, f.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRegistryConcurrent(t *testing.T) {
	f := newFakeRunner()
	reg := NewRegistry(f, testOptions)
	stop := start(t, reg)
	names := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for range 200 {
				name := names[rnd.IntN(len(names))]
				host := fmt.Sprintf("https://%s%d", name, rnd.IntN(3))
				switch rnd.IntN(6) {
				case 0:
					_ = reg.Add(cluster(name, host))
				case 1:
					_ = reg.Update(cluster(name, host))
				case 2:
					_ = reg.Remove(name)
				case 3:
					var cs []Cluster
					for _, n := range names {
						if rnd.IntN(2) == 0 {
							cs = append(cs, cluster(n, fmt.Sprintf("https://%s%d", n, rnd.IntN(3))))
						}
					}
					if err := reg.Set(cs); err != nil {
						t.Errorf("Set: %v", err)
					}
				case 4:
					if c, ok := reg.Get(name); ok && c.Name != name {
						t.Errorf("Get(%q) returned %q", name, c.Name)
					}
				case 5:
					_ = reg.Names()
				}
			}
		})
	}
	wg.Wait()
	// Every registered cluster runs with its registered host; every other one
	// was forgotten after its last run.
	registered := reg.Names()
	for _, name := range registered {
		c, _ := reg.Get(name)
		eventually(t, name+" running", func() bool {
			evs := f.Events()[name]
			return f.Running(name) && evs[len(evs)-1] == "run "+c.Config.Host
		})
	}
	for _, name := range names {
		evs := f.Events()[name]
		if !contains(registered, name) && len(evs) > 0 && evs[len(evs)-1] != "forget" {
			t.Errorf("%s: removed but last event is %q", name, evs[len(evs)-1])
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Start() = %v", err)
	}
	f.check(t)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRegistryLogger(t *testing.T) {
	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	f := newFakeRunner()
	reg := NewRegistry(f, Options{Logger: logger})
	if err := reg.Add(cluster("a", "https://a")); err != nil {
		t.Fatal(err)
	}
	start(t, reg)
	want := `"msg"="Running" "cluster"="a"`
	eventually(t, "runner log line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, want) {
				return true
			}
		}
		return false
	})
}

func TestRegistryConfigCopies(t *testing.T) {
	f := newFakeRunner()
	reg := NewRegistry(f, testOptions)
	c := cluster("a", "https://a")
	if err := reg.Add(c); err != nil {
		t.Fatal(err)
	}
	c.Config.Host = "https://changed"
	got, ok := reg.Get("a")
	if !ok || got.Config.Host != "https://a" {
		t.Fatalf("Get(a) = %v, %v; the caller's change leaked in", got.Config, ok)
	}
	got.Config.Host = "https://changed"
	start(t, reg)
	// The fake runner scribbles on its config; the registry's stays.
	eventually(t, "a running", func() bool { return f.Running("a") })
	if got, _ := reg.Get("a"); got.Config.Host != "https://a" {
		t.Errorf("host = %q, want https://a", got.Config.Host)
	}
}

func TestOptionsDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Options
		want Options
	}{
		{name: "zero", in: Options{}, want: Options{MinRestartBackoff: time.Second, MaxRestartBackoff: time.Minute}},
		{name: "negative", in: Options{MinRestartBackoff: -1, MaxRestartBackoff: -1}, want: Options{MinRestartBackoff: time.Second, MaxRestartBackoff: time.Minute}},
		{name: "max below min", in: Options{MinRestartBackoff: 2 * time.Minute}, want: Options{MinRestartBackoff: 2 * time.Minute, MaxRestartBackoff: 2 * time.Minute}},
		{name: "set", in: Options{MinRestartBackoff: time.Millisecond, MaxRestartBackoff: time.Second}, want: Options{MinRestartBackoff: time.Millisecond, MaxRestartBackoff: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.withDefaults()
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b klog.Logger) bool { return a.GetSink() == b.GetSink() })); diff != "" {
				t.Errorf("withDefaults() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	reg := NewRegistry(newFakeRunner(), Options{})
	tests := []struct {
		failures int
		max      time.Duration
	}{
		{failures: 0, max: time.Second},
		{failures: 1, max: 2 * time.Second},
		{failures: 5, max: 32 * time.Second},
		{failures: 6, max: time.Minute},
		{failures: 1000, max: time.Minute},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("failures=%d", tt.failures), func(t *testing.T) {
			for range 100 {
				if d := reg.backoff(tt.failures); d > tt.max || d < tt.max*9/10 {
					t.Fatalf("backoff(%d) = %v, want within [%v, %v]", tt.failures, d, tt.max*9/10, tt.max)
				}
			}
		})
	}
}

func TestEquivalent(t *testing.T) {
	proxyTo := func(s string) func(*http.Request) (*url.URL, error) {
		u, _ := url.Parse(s)
		return http.ProxyURL(u)
	}
	base := func() *rest.Config {
		return &rest.Config{
			Host:        "https://a",
			APIPath:     "/api",
			BearerToken: "token",
			Impersonate: rest.ImpersonationConfig{UserName: "u", Groups: []string{"g"}, Extra: map[string][]string{"k": {"v"}}},
			TLSClientConfig: rest.TLSClientConfig{
				CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key"),
				ServerName: "a",
			},
			Proxy: proxyTo("http://proxy:3128"),
		}
	}
	tests := []struct {
		name   string
		change func(*rest.Config)
		want   bool
	}{
		{name: "same", change: func(*rest.Config) {}, want: true},
		{name: "tuning only", change: func(c *rest.Config) { c.QPS, c.Burst, c.UserAgent, c.Timeout = 1, 2, "x", time.Second }, want: true},
		{name: "equal proxy funcs", change: func(c *rest.Config) { c.Proxy = proxyTo("http://proxy:3128") }, want: true},
		{name: "rotated token from the same file", change: func(c *rest.Config) { c.BearerTokenFile = "/t" }, want: true},
		{name: "host", change: func(c *rest.Config) { c.Host = "https://b" }},
		{name: "api path", change: func(c *rest.Config) { c.APIPath = "/x" }},
		{name: "token", change: func(c *rest.Config) { c.BearerToken = "other" }},
		{name: "token file", change: func(c *rest.Config) { c.BearerTokenFile = "/other" }},
		{name: "username", change: func(c *rest.Config) { c.Username = "x" }},
		{name: "password", change: func(c *rest.Config) { c.Password = "x" }},
		{name: "CA data", change: func(c *rest.Config) { c.CAData = []byte("x") }},
		{name: "CA file", change: func(c *rest.Config) { c.CAFile = "/ca" }},
		{name: "cert data", change: func(c *rest.Config) { c.CertData = []byte("x") }},
		{name: "cert file", change: func(c *rest.Config) { c.CertFile = "/x" }},
		{name: "key data", change: func(c *rest.Config) { c.KeyData = []byte("x") }},
		{name: "key file", change: func(c *rest.Config) { c.KeyFile = "/x" }},
		{name: "insecure", change: func(c *rest.Config) { c.Insecure = true }},
		{name: "server name", change: func(c *rest.Config) { c.ServerName = "b" }},
		{name: "other proxy", change: func(c *rest.Config) { c.Proxy = proxyTo("http://other:3128") }},
		{name: "no proxy", change: func(c *rest.Config) { c.Proxy = nil }},
		{name: "impersonated user", change: func(c *rest.Config) { c.Impersonate.UserName = "x" }},
		{name: "impersonated groups", change: func(c *rest.Config) { c.Impersonate.Groups = nil }},
		{name: "impersonated extra", change: func(c *rest.Config) { c.Impersonate.Extra = map[string][]string{"k": {"w"}} }},
		{name: "exec provider", change: func(c *rest.Config) { c.ExecProvider = &clientcmdapiExecConfig }},
		{name: "auth provider", change: func(c *rest.Config) { c.AuthProvider = &clientcmdapiAuthProvider }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := base(), base()
			if tt.name == "rotated token from the same file" {
				a.BearerTokenFile = "/t"
				b.BearerToken = "rotated"
			}
			tt.change(b)
			if got := equivalent(a, b); got != tt.want {
				t.Errorf("equivalent() = %v, want %v", got, tt.want)
			}
			if got := equivalent(b, a); got != tt.want {
				t.Errorf("equivalent() reversed = %v, want %v", got, tt.want)
			}
		})
	}
}

var (
	clientcmdapiExecConfig   = clientcmdapi.ExecConfig{Command: "get-token", APIVersion: "client.authentication.k8s.io/v1"}
	clientcmdapiAuthProvider = clientcmdapi.AuthProviderConfig{Name: "oidc"}
)
