package object

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// SortKind is the kind of a SortValue. Present values of different kinds
// sort numbers first, then times, then strings.
type SortKind uint8

// The kinds of sort values.
const (
	// Absent: the object has no value (or null) at the path.
	Absent SortKind = iota
	Number
	Time
	String
)

// SortValue is the value of one sort key for one object: a number, a time
// (a string in RFC 3339 form, as Kubernetes writes timestamps), or any other
// value as a string (booleans "false" and "true", objects and arrays their
// JSON text).
type SortValue struct {
	Kind SortKind
	// Num is a Number's value, or a Time's in Unix microseconds (the
	// finest precision Kubernetes timestamps carry, exact in a float64).
	Num float64
	// Str is a String's value.
	Str string
}

// creationTimestamp is the path every object has a value at, held in
// Object.Created as well.
var creationTimestamp = fieldpath.MustParse("metadata.creationTimestamp")

// SortValueOf returns the value of the sort path p for o: for
// metadata.creationTimestamp from Object.Created, otherwise read from the
// stored bytes, which r decodes. A String's Str may point into r's
// buffers: whoever keeps the value beyond r's next read keeps v.Owned().
func SortValueOf(p fieldpath.Path, o *Object, r *BodyReader) SortValue {
	if IsCreationTimestamp(p) {
		if o.created == 0 {
			return SortValue{}
		}
		return timeValue(o.Created())
	}
	var v SortValue
	o.Each(p, r, func(x fieldpath.Value) bool {
		v = SortValueFrom(x)
		return false
	})
	return v
}

// IsCreationTimestamp reports whether p is metadata.creationTimestamp,
// whose sort value SortValueOf takes from Object.Created.
func IsCreationTimestamp(p fieldpath.Path) bool { return p.String() == creationTimestamp.String() }

// SortValueFrom returns the sort value of an object whose first value at
// a sort path, other than metadata.creationTimestamp, is x.
func SortValueFrom(x fieldpath.Value) SortValue {
	switch x.Kind {
	case fieldpath.Number:
		return SortValue{Kind: Number, Num: x.Num}
	case fieldpath.String:
		if t, ok := parseTime(x.Str); ok {
			return timeValue(t)
		}
		return SortValue{Kind: String, Str: x.Str}
	case fieldpath.Bool:
		return SortValue{Kind: String, Str: fmt.Sprint(x.Bool)}
	default:
		return SortValue{Kind: String, Str: string(x.AppendJSON(nil))}
	}
}

// Owned returns v with a String's text copied, so that it no longer
// points into a decoded body.
func (v SortValue) Owned() SortValue {
	if v.Kind == String {
		v.Str = strings.Clone(v.Str)
	}
	return v
}

func timeValue(t time.Time) SortValue {
	return SortValue{Kind: Time, Num: float64(t.UnixMicro())}
}

// parseTime parses s as an RFC 3339 time, checking its shape first so
// that most other strings cost no parse.
func parseTime(s string) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// CompareSortValues orders two present values: by kind, then by value.
func CompareSortValues(a, b SortValue) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if a.Kind == String {
		return strings.Compare(a.Str, b.Str)
	}
	return cmp.Compare(a.Num, b.Num)
}
