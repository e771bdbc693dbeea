package fieldpath

// Following a Set along a scan of the caller's own. The wire decoder scans
// each object it decodes, checking its structure, to find where values
// end; walking the Set's paths after that (Set.Read) would read the same
// bytes a second time. A Node is where the scan stands in the Set's
// paths, and the scan tells a Found what it meets (Found.Add), so that
// the values are found in the one scan.

// Node is a place in a Set's paths: the value a scan is at, as far as the
// Set's paths are concerned. The zero Node is a value no path goes into.
type Node struct{ n *setNode }

// Root returns the Node of a document's top-level value.
func (s Set) Root() Node { return Node{s.root} }

// IsZero reports whether no path goes into the value.
func (n Node) IsZero() bool { return n.n == nil }

// Member returns the Node of the member key of an object at n, and the
// member's number among those n's paths go into; the zero Node and -1 when
// none goes into it. The first of repeated keys counts, as a lookup
// finds it: a scan that met member number k of an object (k < 64) before
// passes over the others of that key.
func (n Node) Member(key []byte) (Node, int) {
	if n.n == nil {
		return Node{}, -1
	}
	for k := range n.n.keys {
		if n.n.keys[k].key == string(key) {
			return Node{n.n.keys[k].next}, k
		}
	}
	return Node{}, -1
}

// Elements returns the Node of each element of an array at n.
func (n Node) Elements() Node {
	if n.n == nil {
		return Node{}
	}
	return Node{n.n.each}
}

// Ends reports whether paths end at n: Found.Add records its value.
func (n Node) Ends() bool { return n.n != nil && len(n.n.ends) > 0 }

// Collect returns an empty Found of the Set for a document of cluster, to
// be filled by a scan of the caller's (Add, WalkAt) and then completed
// (Done). It holds the values of paths that name the cluster already.
func (s Set) Collect(cluster string) *Found {
	sc := scratchPool.Get().(*scratch)
	sc.found = sc.found[:0]
	for i, p := range s.paths {
		if p.cluster {
			sc.found = append(sc.found, found{i, Value{Kind: String, Str: cluster}})
		}
	}
	sc.f = Found{set: s, sc: sc}
	return &sc.f
}

// Add records raw, the JSON text of the value at n, for the paths that end
// at n; nothing for null. raw must stay as it is until Release.
func (f *Found) Add(n Node, raw []byte) {
	if !n.Ends() {
		return
	}
	if v, ok := leafValue(raw); ok {
		for _, p := range n.n.ends {
			f.sc.found = append(f.sc.found, found{p, v})
		}
	}
}

// WalkAt records the values of the paths from n on in the value that
// starts at raw[i], as Set.Read would: for a part of the document the
// caller's scan did not follow.
func (f *Found) WalkAt(n Node, raw []byte, i int) {
	if n.n != nil {
		f.sc.found = n.n.walkFrom(raw, i, f.sc.found)
	}
}

// Done completes a Found that Collect began: each path's values in the
// order they were recorded, which is the document's.
func (f *Found) Done() {
	byPath(f.sc.found)
	f.all = f.sc.found
}
