package object

import (
	"cmp"
	"strings"
)

// Position is a place in the index order: objects sort by cluster,
// namespace, name, then kind (Type.KindName()), then resource as a
// tie-break. A Position identifies at most one object, so it serves as a
// keyset-paging cursor.
type Position struct{ Cluster, Namespace, Name, Kind, Resource string }

// Position returns the object's place in the index order.
func (o *Object) Position() Position {
	return Position{Cluster: o.Cluster, Namespace: o.Namespace, Name: o.Name, Kind: o.Type.KindName(), Resource: o.Type.Resource}
}

// Compare returns -1, 0 or +1 as p sorts before, equal to or after q.
func (p Position) Compare(q Position) int {
	return cmp.Or(
		strings.Compare(p.Cluster, q.Cluster),
		strings.Compare(p.Namespace, q.Namespace),
		strings.Compare(p.Name, q.Name),
		strings.Compare(p.Kind, q.Kind),
		strings.Compare(p.Resource, q.Resource),
	)
}

// Placeholder returns a placeholder object at p, for seeking in the
// ordered sets (the index's primary order). Its Type has no group, so its
// KindName is p.Kind verbatim. It is never stored.
func (p Position) Placeholder() *Object {
	return &Object{Cluster: p.Cluster, Namespace: p.Namespace, Name: p.Name, Type: &Type{Kind: p.Kind, Resource: p.Resource}}
}

// minType sorts before every real type: its KindName and Resource are empty.
// Placeholder objects use it to seek to the first object of a cluster, a
// namespace or a name.
var minType = &Type{}

// Range is a slice of the Position order: the objects of one cluster or,
// with HasNamespace, of one namespace of a cluster. The index's primary
// order is Position order, so a range's objects are
// adjacent in each.
type Range struct {
	Cluster, Namespace string
	HasNamespace       bool
}

// Contains reports whether o lies in the range.
func (r Range) Contains(o *Object) bool {
	return o.Cluster == r.Cluster && (!r.HasNamespace || o.Namespace == r.Namespace)
}

// Before reports whether the whole range sorts before o.
func (r Range) Before(o *Object) bool {
	if c := strings.Compare(r.Cluster, o.Cluster); c != 0 {
		return c < 0
	}
	return r.HasNamespace && r.Namespace < o.Namespace
}

// Start sets dst to a placeholder object that sorts before every object of
// the range, for seeking, and returns it.
func (r Range) Start(dst *Object) *Object {
	*dst = Object{Cluster: r.Cluster, Namespace: r.Namespace, Type: minType}
	return dst
}

// CompareObjects orders objects by Position without building one: it is the
// comparison of every ordered set in the index.
func CompareObjects(a, b *Object) int {
	if a == b {
		return 0
	}
	if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if a.Type == b.Type {
		return 0
	}
	if c := compareKindNames(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Type.Resource, b.Type.Resource)
}

// compareKindNames compares a.KindName() with b.KindName() without
// allocating the concatenated names.
func compareKindNames(a, b *Type) int {
	if a.GVR.Group == "" && b.GVR.Group == "" {
		return strings.Compare(a.Kind, b.Kind)
	}
	return compareParts(kindParts(a), kindParts(b))
}

// kindParts is t.KindName() as up to three pieces to be read as one string.
func kindParts(t *Type) [3]string {
	if t.GVR.Group == "" {
		return [3]string{t.Kind}
	}
	return [3]string{t.Kind, ".", t.GVR.Group}
}

// compareParts compares the concatenation of a with the concatenation of b.
func compareParts(a, b [3]string) int {
	i, j := 0, 0
	x, y := a[0], b[0]
	for {
		for x == "" && i < len(a)-1 {
			i++
			x = a[i]
		}
		for y == "" && j < len(b)-1 {
			j++
			y = b[j]
		}
		switch {
		case x == "" && y == "":
			return 0
		case x == "":
			return -1
		case y == "":
			return 1
		}
		n := min(len(x), len(y))
		if c := strings.Compare(x[:n], y[:n]); c != 0 {
			return c
		}
		x, y = x[n:], y[n:]
	}
}

// KindNameIs reports whether t.KindName() == s without building the name.
func (t *Type) KindNameIs(s string) bool {
	g := t.GVR.Group
	if g == "" {
		return t.Kind == s
	}
	k := t.Kind
	return len(s) == len(k)+1+len(g) && s[:len(k)] == k && s[len(k)] == '.' && s[len(k)+1:] == g
}
