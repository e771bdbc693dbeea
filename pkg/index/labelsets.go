package index

import (
	"encoding/binary"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// labelSets is a column of the objects' label sets by id: the distinct
// sets of labels the objects carry, numbered, and each id's number. The
// Pods of one ReplicaSet carry one set, so the sets are few, and counting
// the objects of a set of ids by the value of a label (a facet of a
// constrained set) reads 4 bytes per id and a label per distinct set,
// never an object. Guarded by Index.mu.
type labelSets struct {
	// of holds the set of each id; 0, the empty set, for ids without
	// labels or not held.
	of []uint32
	// sets holds each set's labels and how many ids hold it; sets[0] is
	// the empty set, never freed.
	sets []labelSet
	// byKey finds a set by its encoding (key).
	byKey map[string]uint32
	// free are the numbers of freed sets, handed out again.
	free []uint32
	// buf is the encoding being looked up.
	buf []byte
}

type labelSet struct {
	labels object.Labels
	refs   int
}

func newLabelSets() labelSets {
	return labelSets{sets: []labelSet{{}}, byKey: map[string]uint32{}}
}

// hold records ls as the labels of id, which holds none.
func (s *labelSets) hold(id uint32, ls object.Labels) {
	for int(id) >= len(s.of) {
		s.of = append(s.of, 0)
	}
	if len(ls) == 0 {
		s.of[id] = 0
		return
	}
	s.buf = encodeLabels(s.buf[:0], ls)
	n, ok := s.byKey[string(s.buf)]
	if !ok {
		if k := len(s.free); k > 0 {
			n = s.free[k-1]
			s.free = s.free[:k-1]
		} else {
			n = uint32(len(s.sets))
			s.sets = append(s.sets, labelSet{})
		}
		s.sets[n] = labelSet{labels: ls}
		s.byKey[string(s.buf)] = n
	}
	s.sets[n].refs++
	s.of[id] = n
}

// release forgets the labels of id, freeing its set when no other id
// holds it.
func (s *labelSets) release(id uint32) {
	n := s.of[id]
	s.of[id] = 0
	if n == 0 {
		return
	}
	if s.sets[n].refs--; s.sets[n].refs > 0 {
		return
	}
	s.buf = encodeLabels(s.buf[:0], s.sets[n].labels)
	delete(s.byKey, string(s.buf))
	s.sets[n] = labelSet{}
	s.free = append(s.free, n)
}

// replace records ls as the labels of id in place of old.
func (s *labelSets) replace(id uint32, old, ls object.Labels) {
	if slices.Equal(old, ls) {
		return
	}
	s.release(id)
	s.hold(id, ls)
}

// encodeLabels appends to b an encoding of ls that differs for
// different sets, whatever their keys and values hold.
func encodeLabels(b []byte, ls object.Labels) []byte {
	for _, l := range ls {
		b = binary.AppendUvarint(b, uint64(len(l.Key)))
		b = append(b, l.Key...)
		b = binary.AppendUvarint(b, uint64(len(l.Value)))
		b = append(b, l.Value...)
	}
	return b
}

// CountLabelValues adds to counts, for each value of the label key, how
// many of ids carry it, from the label sets of the ids: a few bytes read
// per id and a label looked up per distinct set, where the label
// postings would cost an intersection per value and the objects a read
// each.
func (r Reader) CountLabelValues(ids *roaring.Bitmap, key string, counts map[string]int) {
	s := &r.ix.labelSets
	c := setCounters.Get().(*setCounter)
	defer setCounters.Put(c)
	if len(c.n) < len(s.sets) {
		c.n = make([]uint32, len(s.sets))
	}
	// A count per set number in an array, not a map: the ids of a set
	// are seldom neighbours (the clusters' objects interleave).
	it := ids.ManyIterator()
	buf := c.ids[:]
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		for _, id := range buf[:n] {
			set := s.of[id]
			if c.n[set] == 0 {
				c.touched = append(c.touched, set)
			}
			c.n[set]++
		}
	}
	for _, set := range c.touched {
		if v, ok := s.sets[set].labels.Lookup(key); ok {
			counts[v] += int(c.n[set])
		}
		c.n[set] = 0
	}
	c.touched = c.touched[:0]
}

// setCounter is CountLabelValues' scratch: a count per set number, all 0
// between calls, and the numbers counted.
type setCounter struct {
	n       []uint32
	touched []uint32
	ids     [256]uint32
}

var setCounters = sync.Pool{New: func() any { return new(setCounter) }}
