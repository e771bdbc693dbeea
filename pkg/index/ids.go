package index

import (
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// ids hands out the dense ids of the objects an index holds, their places
// in its postings: an id freed by a delete is handed out again, so that
// the ids stay as dense as the objects are many and the bitmaps small.
// An id lives beside its object in the primary order (entry), never in
// the object, which informer stores share and copies of which are made.
// Guarded by Index.mu.
type ids struct {
	// objs holds the object of each id, nil for a free one.
	objs []*object.Object
	// free are the free ids below len(objs).
	free []uint32
}

// hold gives o an id.
func (s *ids) hold(o *object.Object) uint32 {
	if n := len(s.free); n > 0 {
		id := s.free[n-1]
		s.free = s.free[:n-1]
		s.objs[id] = o
		return id
	}
	s.objs = append(s.objs, o)
	return uint32(len(s.objs) - 1)
}

// release frees id.
func (s *ids) release(id uint32) {
	s.objs[id] = nil
	s.free = append(s.free, id)
}

// object returns the object of id, nil for a free id.
func (s *ids) object(id uint32) *object.Object { return s.objs[id] }
