package fieldpath

import (
	"slices"
	"sync"
)

// Set is several paths read together: the steps they share are taken
// once, so that reading all of them costs about one walk of the parts of
// the object they go through, instead of one walk per path (a Pod's
// indexed paths share spec, spec.volumes[] and spec.containers[]). The
// zero Set holds no path. A Set is immutable and safe for concurrent use;
// copies share what they hold.
type Set struct {
	paths []Path
	root  *setNode
	// index gives a path's number by its text.
	index map[string]int
}

// setNode is where some paths of a Set have taken the same steps.
type setNode struct {
	// ends are the paths that end here, by their index in the Set.
	ends []int
	keys []setKey
	each *setNode
}

type setKey struct {
	key  string
	next *setNode
}

// NewSet returns the Set of paths, in their order.
func NewSet(paths []Path) Set {
	s := Set{paths: slices.Clip(paths), root: new(setNode), index: make(map[string]int, len(paths))}
	for i, p := range paths {
		if _, dup := s.index[p.text]; !dup {
			s.index[p.text] = i
		}
		if p.cluster {
			continue
		}
		n := s.root
		for _, seg := range p.segs {
			n = n.step(seg)
		}
		n.ends = append(n.ends, i)
	}
	return s
}

// step returns the node after seg from n, adding it if new.
func (n *setNode) step(seg segment) *setNode {
	if seg.each {
		if n.each == nil {
			n.each = new(setNode)
		}
		return n.each
	}
	for _, k := range n.keys {
		if k.key == seg.key {
			return k.next
		}
	}
	next := new(setNode)
	n.keys = append(n.keys, setKey{key: seg.key, next: next})
	return next
}

// Paths returns the Set's paths, in their order. The slice is the Set's:
// do not modify it.
func (s Set) Paths() []Path { return s.paths }

// Index returns the number of p in the Set (of its first occurrence),
// false if p is not in it.
func (s Set) Index(p Path) (int, bool) {
	i, ok := s.index[p.text]
	return i, ok
}

// Equal reports whether s and o hold the same paths in the same order.
func (s Set) Equal(o Set) bool {
	return slices.EqualFunc(s.paths, o.paths, func(a, b Path) bool { return a.text == b.text })
}

// Len is the number of paths.
func (s Set) Len() int { return len(s.paths) }

// Found is what one walk of a Set over a document found (Set.Read): the
// values of each of its paths. Callers that read the same document for
// different purposes read it once with a Set of all their paths. It is
// valid until Release.
type Found struct {
	set Set
	sc  *scratch
	// all are the values, by path, each path's in document order.
	all []found
	// next is where the values after the path read last begin: paths
	// are mostly read in order.
	next int
}

// Read walks d once for every path of the Set.
func (s Set) Read(d Doc) *Found {
	sc := scratchPool.Get().(*scratch)
	sc.f = Found{set: s, sc: sc, all: s.sorted(d, sc)}
	return &sc.f
}

// Release ends the use of f.
func (f *Found) Release() {
	sc := f.sc
	*f = Found{}
	scratchPool.Put(sc)
}

// values returns the values of the Set's path i.
func (f *Found) values(i int) []found {
	from := f.next
	if from > 0 && f.all[from-1].path >= i {
		from, _ = slices.BinarySearchFunc(f.all, i, func(x found, i int) int { return x.path - i })
	}
	for from < len(f.all) && f.all[from].path < i {
		from++
	}
	to := from
	for to < len(f.all) && f.all[to].path == i {
		to++
	}
	f.next = to
	return f.all[from:to]
}

// Each calls fn with each value of the Set's path i, in document order,
// until fn returns false; it returns false if fn did.
func (f *Found) Each(i int, fn func(Value) bool) bool {
	for _, x := range f.values(i) {
		if !fn(x.v) {
			return false
		}
	}
	return true
}

// JSON returns the value Paths()[i].AppendJSONIn writes for the
// document, valid until the next call of JSON or Release.
func (f *Found) JSON(i int) []byte {
	w := newJSONList(f.sc.json[:0], f.set.paths[i].crosses)
	for _, x := range f.values(i) {
		w.add(x.v)
	}
	f.sc.json = w.end()
	return f.sc.json
}

// sorted returns the values of the paths in d, in sc's buffer: by path,
// each path's in document order. The walk finds them in document order,
// the paths' interleaved. The buffers are pooled: on the stack, the
// walk's recursion and the callers' fn would move them to the heap.
func (s Set) sorted(d Doc, sc *scratch) []found {
	sc.found = s.values(d, sc.found[:0])
	byPath(sc.found)
	return sc.found
}

// byPath sorts values found in document order by path, each path's
// staying in document order.
func byPath(all []found) {
	slices.SortStableFunc(all, func(a, b found) int { return a.path - b.path })
}

type scratch struct {
	found []found
	json  []byte
	f     Found
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// found is a value of the Set's path number path.
type found struct {
	path int
	v    Value
}

// values appends the values of every path in d to dst.
func (s Set) values(d Doc, dst []found) []found {
	for i, p := range s.paths {
		if p.cluster {
			dst = append(dst, found{i, Value{Kind: String, Str: d.Cluster}})
		}
	}
	raw := d.Raw
	if len(raw) == 0 || s.root == nil { // the zero Set
		return dst
	}
	if d.StatusOnly {
		// Raw is the value of status: the paths into it, not status
		// itself (see IntoStatus).
		for _, k := range s.root.keys {
			if k.key == "status" {
				dst = k.next.childrenFrom(raw, skipSpace(raw, 0), dst)
			}
		}
		return dst
	}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return dst
	}
	// The paths under spec or status start at its value when d says
	// where it is; the others are found in one pass over the members.
	var walked uint64
	for k, key := range s.root.keys {
		if at := d.memberAt(segment{key: key.key}); k < 64 && at > 0 && at < len(raw) {
			dst = key.next.walkFrom(raw, at, dst)
			walked |= 1 << k
		}
	}
	if walked != 1<<len(s.root.keys)-1 {
		_, dst = s.root.membersAt(raw, i+1, dst, walked, true)
	}
	return dst
}
