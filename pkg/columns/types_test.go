package columns

import (
	"runtime"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// testTypes is the printers table of the tests; each records the printers
// of its own types.
var testTypes = new(Types)

// TestTypesForgetCollectedTypes checks that the table holds its types
// weakly: once a type is collected, its entry goes.
func TestTypesForgetCollectedTypes(t *testing.T) {
	ts := new(Types)
	kept := &object.Type{Resource: "widgets.example.com", Kind: "Widget"}
	ts.Set(kept, &Custom{})
	for range 100 {
		ts.Set(&object.Type{Resource: "gadgets.example.com", Kind: "Gadget"}, DataNotCached)
	}
	entries := func() int {
		n := 0
		ts.m.Range(func(any, any) bool { n++; return true })
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for entries() > 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := entries(); n != 1 {
		t.Errorf("%d entries left, want the one of the type still in use", n)
	}
	if _, ok := ts.Printer(kept).(*Custom); !ok {
		t.Errorf("the type still in use has printer %T", ts.Printer(kept))
	}
	if p := (*Types)(nil).Printer(kept); p != nil {
		t.Errorf("a nil table holds %T", p)
	}
	runtime.KeepAlive(kept)
}
