package informers

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/wire"
)

// runStore is the store of one run's reflector. It applies what the
// reflector hands it to the sink at once, in the reflector's goroutine: no
// informer store, DeltaFIFO, processor or handler goroutines sit between a
// watch and the index (a shared informer costs about ten goroutines and two
// queues per type; this costs none). client-go calls it from one goroutine.
type runStore struct {
	c      *Ingester
	run    *typeRun
	events *health.EventCounter
	// lag observes the time from an object's change in its cluster to its
	// arrival in the index (wire.Decoded.Changed); nil when not measured.
	lag interface{ Observe(float64) }
	// listed is set by the run's first Replace: later lists of the same
	// run count their objects as modified.
	listed bool
	// loaded is set once a warm start's load has ended (see ready).
	loaded bool
}

// ready waits, before the run's first write to the sink, for a warm
// start's load to end (Options.Loading): until then the sink is the
// load's alone, and the run reports nothing synced. After a failed load
// the sink holds nothing restored: a run that resumed from the snapshot is
// interrupted (its replacement lists) and writes nothing.
func (s *runStore) ready() error {
	if s.loaded {
		return nil
	}
	err := s.c.loaded(s.run.ctx)
	switch {
	case err == nil:
	case s.run.ctx.Err() != nil:
		return err
	case s.run.wasResumed():
		s.c.interrupt(s.run, "the snapshot's load failed: listing")
		return err
	}
	s.loaded = true
	return nil
}

var _ cache.ReflectorStore = (*runStore)(nil)

func (s *runStore) Add(obj any) error    { return s.upsert(obj, health.EventAdded) }
func (s *runStore) Update(obj any) error { return s.upsert(obj, health.EventModified) }

func (s *runStore) Delete(obj any) error {
	if err := s.ready(); err != nil {
		return err
	}
	o, err := s.object(obj)
	if err != nil {
		return err
	}
	s.c.sink.Delete(o.Key())
	s.events.Record(health.EventDeleted, time.Now())
	return nil
}

// UpdateResourceVersion advances the stream's clock: the reflector calls
// it after each watch event it applied and for each bookmark.
func (s *runStore) UpdateResourceVersion(rv string) {
	if s.ready() != nil {
		return
	}
	s.c.sink.Progress(s.c.name, s.run.t.Resource, rv)
	s.c.caughtUp(s.run, rv)
}

var _ cache.ResourceVersionUpdater = (*runStore)(nil)

// Resync is a no-op: the reflector has no resync period.
func (s *runStore) Resync() error { return nil }

// Replace applies a complete list: every listed object is upserted, a
// batch at a time (Index.UpsertAll; the index ignores those it holds
// unchanged), the objects of this cluster and type that the list lacks
// are deleted (pointer-conditional, so that a newer version is never
// removed), and then the run is synced.
func (s *runStore) Replace(list []any, rv string) error {
	if s.run.takeResumedList() {
		s.listed = true // the objects restored from a snapshot stay (restore.go)
		// Synced at once when the member has not moved on since the
		// snapshot: no event or bookmark past it would come. While the
		// snapshot still loads, that waits on a goroutine of the run's
		// own, and the watch begins meanwhile.
		if s.loaded || s.c.opts.Loading == nil {
			s.c.caughtUp(s.run, rv)
			return nil
		}
		run := s.run
		run.wg.Go(func() {
			err := s.c.loaded(run.ctx)
			switch {
			case err == nil:
				s.c.caughtUp(run, rv)
			case run.ctx.Err() == nil:
				s.c.interrupt(run, "the snapshot's load failed: listing")
			}
		})
		return nil
	}
	if err := s.ready(); err != nil {
		return err
	}
	typ := health.EventAdded
	if s.listed {
		typ = health.EventModified
	}
	now := time.Now()
	keep := make(map[object.Key]struct{}, len(list))
	prepared := make([]index.Prepared, 0, len(list))
	for _, item := range list {
		d, withText, err := s.decoded(item)
		if err != nil {
			return err
		}
		keep[d.Key()] = struct{}{}
		prepared = append(prepared, prepare(d, withText))
		s.events.Record(typ, now)
	}
	s.c.sink.UpsertAll(prepared)
	for _, o := range s.c.sink.Objects(s.c.name, s.run.t.Resource) {
		if _, ok := keep[o.Key()]; !ok && s.c.sink.DeleteObject(o) {
			s.events.Record(health.EventDeleted, now)
		}
	}
	// The list's resourceVersion covers every change it applied: the
	// stream's clock (index.Index.Progress), for the cursors.
	s.c.sink.Progress(s.c.name, s.run.t.Resource, rv)
	s.listed = true
	s.c.listApplied(s.run)
	return nil
}

func (s *runStore) upsert(obj any, typ health.EventType) error {
	if err := s.ready(); err != nil {
		return err
	}
	d, err := s.apply(obj)
	if err != nil {
		return err
	}
	now := time.Now()
	s.events.Record(typ, now)
	if s.lag != nil && !d.Changed.IsZero() {
		s.lag.Observe(max(now.Sub(d.Changed), 0).Seconds())
	}
	return nil
}

// object returns the object the reflector handed over: a wire.Decoded,
// an object, or either in a DeletedFinalStateUnknown.
func (s *runStore) object(obj any) (*object.Object, error) {
	d, _, err := s.decoded(obj)
	if err != nil {
		return nil, err
	}
	return d.Object, nil
}

// decoded returns obj as a wire.Decoded, and whether it holds the text its
// decoder read: an *object.Object (one the reflector copied, or a
// DeletedFinalStateUnknown's) does not.
func (s *runStore) decoded(obj any) (d *wire.Decoded, withText bool, err error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	switch o := obj.(type) {
	case *wire.Decoded:
		return o, true, nil
	case *object.Object:
		return &wire.Decoded{Object: o}, false, nil
	}
	return nil, false, fmt.Errorf("%s: unexpected object of type %T", s.run.t.Resource, obj)
}

// apply upserts obj into the sink and returns it.
func (s *runStore) apply(obj any) (*wire.Decoded, error) {
	d, withText, err := s.decoded(obj)
	if err != nil {
		return nil, err
	}
	s.c.sink.UpsertPrepared(prepare(d, withText))
	return d, nil
}

// prepare returns d as the sink inserts it: with the text its decoder
// read, or else with the text read from its body (an object the decoder
// did not hand over, which is rare: it allocates a reader).
func prepare(d *wire.Decoded, withText bool) index.Prepared {
	if !withText {
		return index.Prepared{Object: d.Object, Text: index.TextTokens(d.Object, new(object.BodyReader))}
	}
	return index.Prepared{Object: d.Object, Text: d.Text}
}
