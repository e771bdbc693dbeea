package fieldpath

import (
	"slices"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
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
	key, gkey string
	next      *setNode
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
	n.keys = append(n.keys, setKey{key: seg.key, gkey: seg.gkey, next: next})
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

// EachIn calls fn with each value of the Set's paths in d, as Path.EachIn
// finds them: path after path in the Set's order, i the path's index,
// each path's values in document order; until fn returns false. It
// returns false if fn did.
func (s Set) EachIn(d Doc, fn func(i int, v Value) bool) bool {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	for _, f := range s.sorted(d, sc) {
		if !fn(f.path, f.v) {
			return false
		}
	}
	return true
}

// EachJSONIn calls fn for each path of the Set, in order, with i its
// index and json the value Paths()[i].AppendJSONIn writes for d. json is
// valid during the call only.
func (s Set) EachJSONIn(d Doc, fn func(i int, json []byte)) {
	if len(s.paths) == 0 {
		return
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	all := s.sorted(d, sc)
	for i, p := range s.paths {
		w := newJSONList(sc.json[:0], p.crosses)
		for ; len(all) > 0 && all[0].path == i; all = all[1:] {
			w.add(all[0].v)
		}
		sc.json = w.end()
		fn(i, sc.json)
	}
}

// sorted returns the values of the paths in d, in sc's buffer: by path,
// each path's in document order. The walk finds them in document order,
// the paths' interleaved. The buffers are pooled: on the stack, the
// walk's recursion and the callers' fn would move them to the heap.
func (s Set) sorted(d Doc, sc *scratch) []found {
	sc.found = s.values(d, sc.found[:0])
	slices.SortStableFunc(sc.found, func(a, b found) int { return a.path - b.path })
	return sc.found
}

type scratch struct {
	found []found
	json  []byte
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
	parse := func(b []byte) gjson.Result {
		// Raw is never modified: a string view of it saves gjson a copy.
		return gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
	}
	if d.StatusOnly {
		// Raw is the value of status: the paths into it, not status
		// itself (see IntoStatus).
		for _, k := range s.root.keys {
			if k.key == "status" {
				dst = k.next.children(parse(raw), dst)
			}
		}
		return dst
	}
	root := parse(raw)
	if !root.IsObject() {
		return dst
	}
	for _, k := range s.root.keys {
		at := d.memberAt(segment{key: k.key})
		if at <= 0 || at >= len(raw) {
			dst = k.next.walk(root.Get(k.gkey), dst)
			continue
		}
		// As in EachIn: the paths under spec or status start at its
		// value, which gjson reads to its end and no further; the value
		// itself, whose end gjson does not find so, is looked up.
		if len(k.next.ends) > 0 {
			dst = k.next.ended(root.Get(k.gkey), dst)
		}
		dst = k.next.children(parse(raw[at:]), dst)
	}
	return dst
}

// walk appends the values of the paths that end at n or after it, r
// being the value at n.
func (n *setNode) walk(r gjson.Result, dst []found) []found {
	return n.children(r, n.ended(r, dst))
}

// ended appends r, the value at n, for each path that ends at n.
func (n *setNode) ended(r gjson.Result, dst []found) []found {
	if len(n.ends) == 0 {
		return dst
	}
	if v, ok := valueOf(r); ok {
		for _, i := range n.ends {
			dst = append(dst, found{i, v})
		}
	}
	return dst
}

// children is walk for the paths that go on after n.
func (n *setNode) children(r gjson.Result, dst []found) []found {
	if n.each != nil && r.IsArray() {
		r.ForEach(func(_, e gjson.Result) bool {
			dst = n.each.walk(e, dst)
			return true
		})
	}
	if len(n.keys) == 0 || !r.IsObject() {
		return dst
	}
	if len(n.keys) == 1 {
		return n.keys[0].next.walk(r.Get(n.keys[0].gkey), dst)
	}
	// One pass over the members for several keys, instead of a lookup
	// each; the first of repeated keys, as a lookup finds it.
	var seen uint64
	left := len(n.keys)
	r.ForEach(func(k, v gjson.Result) bool {
		for i := range n.keys {
			if n.keys[i].key != k.Str {
				continue
			}
			if i < 64 && seen&(1<<i) != 0 {
				break
			}
			seen |= 1 << i
			left--
			dst = n.keys[i].next.walk(v, dst)
			break
		}
		return left > 0
	})
	return dst
}
