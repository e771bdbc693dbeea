package informers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TestInterruptedRunStopsAtOnce starts a run against an address that
// refuses connections: its first request interrupts it, and stopping it
// then must not wait for client-go's backoff, which after a failed
// WatchList request sleeps 0.8 s or more without watching the context.
// Replacing a run stops it first (Ingester.replaceStale), so such a sleep
// would delay every recovery.
func TestInterruptedRunStopsAtOnce(t *testing.T) {
	ix := index.New(index.Options{})
	c, err := NewIngester("refused", &rest.Config{Host: "https://" + testcluster.FreeAddr(t)}, ix, health.NewTracker(ix, health.Options{}), Options{Resources: []string{"configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.dialer.CloseAll()
	configMaps := &object.Type{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Resource: "configmaps", Namespaced: true}
	run, err := c.startRun(t.Context(), configMaps, Restored{})
	if err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 10*time.Second, "the run interrupted by connection refused", func() (bool, string) {
		return run.isInterrupted(), "not interrupted"
	})
	time.Sleep(50 * time.Millisecond) // into client-go's backoff, if the run got there
	begin := time.Now()
	run.cancel()
	run.wg.Wait()
	if took := time.Since(begin); took > 400*time.Millisecond {
		t.Errorf("stopping an interrupted run took %s, want it at once", took)
	}
}
