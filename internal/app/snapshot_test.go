package app_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// logBuffer collects klog's output while a test runs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// captureLogs sends klog's output to a buffer until the test ends.
func captureLogs(t *testing.T) *logBuffer {
	var buf logBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return &buf
}

// snapshotRun starts an aggregator of cluster c2's configmaps on the
// snapshot in dir, waits until c2 is SYNCED, and stops it. It returns the
// aggregator, stopped, for its metrics.
func snapshotRun(t *testing.T, dir string) *app.Aggregator {
	t.Helper()
	agg, err := app.New(app.Options{
		Informers: informers.Options{Resources: []string{"configmaps"}},
		Snapshot:  app.SnapshotOptions{Dir: dir, Interval: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := agg.Registry.Add(clusters.Cluster{Name: "c2", Config: testbed.Env(t).Cluster("c2").AdminConfig()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agg.Start(ctx) }()
	testcluster.Eventually(t, 60*time.Second, "c2 SYNCED", func() (bool, string) {
		st, _ := agg.Health.Cluster("c2")
		return st.Status == health.Synced, st.Message
	})
	// SYNCED with every configmap, whatever became of the snapshot.
	list, err := testcluster.Dynamic(t, testbed.Env(t).Cluster("c2").AdminConfig()).
		Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := agg.Index.ObjectCount("c2", "configmaps"); n != len(list.Items) {
		t.Errorf("c2 SYNCED with %d configmaps in the index, the server holds %d", n, len(list.Items))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("aggregator: %v", err)
	}
	return agg
}

// gauge returns the value of a metric of reg with the given label, 0 when absent.
func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == label && l.GetValue() == value)
			}
			if !match {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// withEngine opens the snapshot store's engine directly, as a damaged disk
// or an older release would leave it, and flushes what fn wrote to a table.
func withEngine(t *testing.T, dir string, fn func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatTableFormatV6})
	if err != nil {
		t.Fatal(err)
	}
	fn(db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// table returns the largest table file of the store: the one holding the
// objects.
func table(t *testing.T, dir string) string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	var best string
	var size int64
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil && fi.Size() > size {
			best, size = n, fi.Size()
		}
	}
	if best == "" {
		t.Fatal("the store has no table")
	}
	return best
}

// TestSnapshotSetAside damages the snapshot between two runs the way a
// volume or an upgrade can (a table cut short, bytes flipped in a table, a
// record that does not decode, found while the cluster already runs, a
// store written in an older format): the next start says so in a log line
// and fleetcache_snapshot_discarded_total, starts cold and syncs, and writes
// a snapshot the start after it loads.
func TestSnapshotSetAside(t *testing.T) {
	testcluster.SkipShort(t, "real kube-apiservers")
	logs := captureLogs(t)
	flush := func(db *pebble.DB) {}
	tests := []struct {
		name, reason string
		damage       func(t *testing.T, dir string)
	}{
		{"torn", "torn", func(t *testing.T, dir string) {
			withEngine(t, dir, flush)
			name := table(t, dir)
			fi, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(name, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"corrupt", "corrupt", func(t *testing.T, dir string) {
			withEngine(t, dir, flush)
			name := table(t, dir)
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(b) * 97 / 100; i < len(b)*97/100+16; i++ {
				b[i] ^= 0xff
			}
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		// Found half-way through the load, after the cluster started.
		{"record", "corrupt", func(t *testing.T, dir string) {
			withEngine(t, dir, func(db *pebble.DB) {
				it, err := db.NewIter(nil)
				if err != nil {
					t.Fatal(err)
				}
				var last []byte
				for ok := it.First(); ok; ok = it.Next() {
					if bytes.Contains(it.Key(), []byte("c2\x00configmaps\x00o")) {
						last = bytes.Clone(it.Key())
					}
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				if last == nil {
					t.Fatal("the store holds no configmap of c2")
				}
				if err := db.Set(last, []byte("\xff\xff\xff\xff not a record"), pebble.Sync); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"format", "format", func(t *testing.T, dir string) {
			withEngine(t, dir, func(db *pebble.DB) {
				// The previous release's format version.
				if err := db.Set([]byte("\x00\x00\x00\x00format"), []byte("fleetcache-snapshot/1"), pebble.Sync); err != nil {
					t.Fatal(err)
				}
			})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "snapshot")
			first := snapshotRun(t, dir)
			if n := metricValue(t, first.Metrics, "fleetcache_snapshot_writes_total", "result", "ok"); n == 0 {
				t.Fatal("the first run wrote no snapshot")
			}
			tc.damage(t, dir)
			second := snapshotRun(t, dir)
			if n := metricValue(t, second.Metrics, "fleetcache_snapshot_discarded_total", "reason", tc.reason); n != 1 {
				t.Errorf("fleetcache_snapshot_discarded_total{reason=%q} = %v, want 1", tc.reason, n)
			}
			if n := metricValue(t, second.Metrics, "fleetcache_snapshot_loaded_objects", "", ""); n != 0 {
				t.Errorf("%v objects loaded from a damaged snapshot", n)
			}
			if !strings.Contains(logs.String(), "starting cold") || !strings.Contains(logs.String(), `reason="`+tc.reason+`"`) {
				t.Errorf("no log line says the snapshot was set aside (%s); the log:\n%s", tc.reason, logs.String())
			}
			// What the second run wrote is a snapshot again.
			third, err := app.New(app.Options{Snapshot: app.SnapshotOptions{Dir: dir}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- third.Start(ctx) }()
			if err := third.WaitLoaded(ctx); err != nil {
				t.Fatal(err)
			}
			if n := metricValue(t, third.Metrics, "fleetcache_snapshot_loaded_objects", "", ""); n == 0 {
				t.Error("the snapshot written after a cold start loads no object")
			}
			if n := third.Index.ObjectCount("c2", "configmaps"); n == 0 {
				t.Error("the index restored after a cold start holds no configmap of c2")
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSnapshotKeptWhenStoppedWhileLoading stops aggregators before their
// load of the snapshot ended (the load cut short): none of them writes
// the store, and the next start loads what the first run wrote.
func TestSnapshotKeptWhenStoppedWhileLoading(t *testing.T) {
	testcluster.SkipShort(t, "real kube-apiservers")
	dir := filepath.Join(t.TempDir(), "snapshot")
	first := snapshotRun(t, dir)
	written := first.Index.ObjectCount("c2", "configmaps")
	if written == 0 {
		t.Fatal("the first run holds no configmap")
	}
	for range 8 {
		agg, err := app.New(app.Options{Snapshot: app.SnapshotOptions{Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := agg.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	last, err := app.New(app.Options{Snapshot: app.SnapshotOptions{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- last.Start(ctx) }()
	if err := last.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	if n := last.Index.ObjectCount("c2", "configmaps"); n != written {
		t.Errorf("after starts stopped while loading, the snapshot loads %d configmaps of c2, the first run wrote %d", n, written)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
