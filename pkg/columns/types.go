package columns

import (
	"runtime"
	"sync"
	"weak"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Types is the side table of what printing an object needs beyond its
// kind, per object.Type: for a custom resource type a *Custom, holding its
// CustomResourceDefinition's printer columns; for core Secrets whose data
// is not cached, DataNotCached. pkg/informers records a type's printer
// (Set) when it sets the type up, before any object points at it; For and
// Row read it through the object's type.
//
// The table holds its types weakly: an entry goes when its type is
// collected, so types that a cluster's restarts replace do not pile up.
// The zero Types is empty and ready; a nil *Types is an empty table that
// cannot be set. A Types is safe for concurrent use.
type Types struct {
	m sync.Map // weak.Pointer[object.Type] -> *Custom or DataNotCached
}

// Set records printer, a *Custom or DataNotCached, as t's.
func (ts *Types) Set(t *object.Type, printer any) {
	k := weak.Make(t)
	if _, loaded := ts.m.Swap(k, printer); !loaded {
		// The cleanup holds the table and the weak key, never t.
		runtime.AddCleanup(t, func(k weak.Pointer[object.Type]) { ts.m.Delete(k) }, k)
	}
}

// Printer returns what Set recorded for t, nil if nothing.
func (ts *Types) Printer(t *object.Type) any {
	if ts == nil {
		return nil
	}
	p, _ := ts.m.Load(weak.Make(t))
	return p
}
