package graphql

import (
	"testing"

	"github.com/fleetcache/fleetcache/pkg/fanout"
)

// TestServerOptions checks what Options reports: the defaults filled in.
func TestServerOptions(t *testing.T) {
	f := newFixture(t)
	o := newServer(t, f.ix, f.tracker, Options{}).Options()
	if o.MaxCost != defaultMaxCost || o.MaxResponseBytes != defaultMaxResponseBytes || o.MaxPageSize != defaultMaxPageSize {
		t.Errorf("defaults: MaxCost %d, MaxResponseBytes %d, MaxPageSize %d", o.MaxCost, o.MaxResponseBytes, o.MaxPageSize)
	}
	if o.Fanout != fanout.DefaultOptions() {
		t.Errorf("fanout options %+v, want the defaults %+v", o.Fanout, fanout.DefaultOptions())
	}
}
