package planner

import (
	"errors"
	"fmt"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// SortKey is one key of a sort: the value at a path, ascending or
// descending. Objects without a value come last in either order.
type SortKey struct {
	Path fieldpath.Path
	Desc bool
}

// ErrSortPath reports a sort key whose path crosses an array: such a path
// has no single value to sort by.
var ErrSortPath = errors.New("a sort path must not cross an array ([])")

// CheckSort returns an error wrapping ErrSortPath when a key's path crosses
// an array.
func CheckSort(keys []SortKey) error {
	for _, k := range keys {
		if k.Path.Crosses() {
			return fmt.Errorf("%w: %s", ErrSortPath, k.Path)
		}
	}
	return nil
}

// compareValues orders two values of a key: absent ones last, in either
// direction.
func compareValues(a, b object.SortValue, desc bool) int {
	switch {
	case a.Kind == object.Absent && b.Kind == object.Absent:
		return 0
	case a.Kind == object.Absent:
		return 1
	case b.Kind == object.Absent:
		return -1
	case desc:
		return object.CompareSortValues(b, a)
	default:
		return object.CompareSortValues(a, b)
	}
}

// compareSorted orders two objects with their values of keys: by each key,
// then by Position.
func compareSorted(keys []SortKey, va []object.SortValue, a *object.Object, vb []object.SortValue, b *object.Object) int {
	for i, k := range keys {
		if c := compareValues(va[i], vb[i], k.Desc); c != 0 {
			return c
		}
	}
	return object.CompareObjects(a, b)
}
