package informers_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// countedConn counts the bytes it reads, and itself out of open when it
// closes.
type countedConn struct {
	net.Conn
	open   *atomic.Int64
	closed atomic.Bool
	read   atomic.Int64
	once   sync.Once
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countedConn) Close() error {
	c.closed.Store(true)
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// TestSyncedClusterKeepsOneConnection: once a cluster is SYNCED, only the
// connection of its watches and probes stays open, one that never carried a
// list; the one its discovery and lists used closes, and with it the
// buffers it grew for them. Changes still arrive over the watches'
// connection.
func TestSyncedClusterKeepsOneConnection(t *testing.T) {
	env := testbed.Env(t)
	c2 := env.Cluster("c2")
	var open, dialed atomic.Int64
	var mu sync.Mutex
	var conns []*countedConn
	cfg := c2.AdminConfig()
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dialed.Add(1)
		open.Add(1)
		cc := &countedConn{Conn: conn, open: &open}
		mu.Lock()
		conns = append(conns, cc)
		mu.Unlock()
		return cc, nil
	}
	// The list of ConfigMaps is at least listBytes long.
	const listBytes = 40 * 2048
	dc := testcluster.Dynamic(t, c2.AdminConfig())
	testcluster.CreateNamespace(t, dc, "oneconn")
	for i := range 40 {
		create(t, dc, configMap("oneconn", fmt.Sprintf("big-%02d", i), map[string]any{"k": strings.Repeat("x", 2048)}))
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps", "namespaces"), clusters.Cluster{Name: c2.Name(), Config: cfg})
	waitStatus(t, f, c2.Name(), health.Synced)
	testcluster.Eventually(t, 30*time.Second, "one connection open once synced", func() (bool, string) {
		return open.Load() == 1, fmt.Sprintf("%d open of %d dialed", open.Load(), dialed.Load())
	})
	mu.Lock()
	for _, c := range conns {
		if !c.closed.Load() && c.read.Load() >= listBytes {
			t.Errorf("the connection left open read %d bytes, as much as a list: it carried the lists", c.read.Load())
		}
	}
	mu.Unlock()

	create(t, dc, configMap("oneconn", "after-sync", map[string]any{"k": "v"}))
	key := object.Key{Cluster: c2.Name(), Resource: "configmaps", Namespace: "oneconn", Name: "after-sync"}
	testcluster.Eventually(t, 30*time.Second, "the new ConfigMap in the index", func() (bool, string) {
		return f.index.Get(key) != nil, ""
	})
	if n := open.Load(); n != 1 {
		t.Errorf("%d connections open after a watch event, want 1", n)
	}
	if s, _ := f.health.Cluster(c2.Name()); s.Status != health.Synced {
		t.Errorf("cluster %s after the event: %+v", c2.Name(), s)
	}
}

// trackedTransport marks a transport client-go built for a cluster, so
// that a test sees when it is collected.
type trackedTransport struct{ http.RoundTripper }

// TestSyncedClusterDropsItsRequestTransport: once a cluster is synced and
// its lists are over, the transport of its requests other than watches is
// dropped (and collected), while its watches' transport stays.
func TestSyncedClusterDropsItsRequestTransport(t *testing.T) {
	env := testbed.Env(t)
	c3 := env.Cluster("c3")
	var requestLive, watchLive atomic.Int64
	cfg := c3.AdminConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		live := &watchLive
		if ht, ok := rt.(*http.Transport); ok && slices.Equal(ht.TLSClientConfig.NextProtos, []string{"http/1.1"}) {
			live = &requestLive
		}
		live.Add(1)
		tracked := &trackedTransport{rt}
		runtime.AddCleanup(tracked, func(live *atomic.Int64) { live.Add(-1) }, live)
		return tracked
	}
	f := startFleet(t, index.Options{}, testOptions("configmaps"), clusters.Cluster{Name: c3.Name(), Config: cfg})
	waitStatus(t, f, c3.Name(), health.Synced)
	testcluster.Eventually(t, 30*time.Second, "the request transport collected, the watches' kept", func() (bool, string) {
		runtime.GC()
		return requestLive.Load() == 0 && watchLive.Load() == 1,
			fmt.Sprintf("%d request transports live, %d watch transports", requestLive.Load(), watchLive.Load())
	})
	if s, _ := f.health.Cluster(c3.Name()); s.Status != health.Synced {
		t.Errorf("cluster %s without its request transport: %+v", c3.Name(), s)
	}
}
