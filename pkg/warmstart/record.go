package warmstart

import (
	"encoding/binary"
	"errors"
	"strings"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// An object's value in the store is its stored form (object.Stored): the
// body as the index holds it, compressed with the codec's dictionary that
// the store keeps beside it, the metadata the indexes need, the projected
// values, and the tokens the body adds to the searched text. A load then
// neither parses nor compresses JSON: about 2 µs an object instead of 50.
//
//	version 1 | uid | resourceVersion | created (Unix ns as a uvarint, 0: none)
//	| labels (count, then key, value) | owners (count, then apiVersion,
//	kind, name, uid, controller) | specAt | statusAt | projected
//	| text tokens (count, then each) | body (the rest)
//
// Strings are a uvarint length and their bytes; counts are uvarints. The
// namespace and name are the key's.
const recordVersion = 1

// derivation names what a stream's records derive from their objects:
// the paths whose values they keep (object.Type.Projected), and the
// tokens' and the values' versions. A load from records of another
// derivation builds each object from its JSON again. Change textVersion
// with search.Tokens, search.StoredText or index.TextTokens, valuesVersion
// with how object.Object keeps the projected values (2: absent ones as a
// length of 0, or not at all at the end), so that a binary of another
// version does not read them.
func derivation(t *object.Type) string {
	const textVersion, valuesVersion = "1", "2"
	var b strings.Builder
	b.WriteString("text=" + textVersion + " values=" + valuesVersion + " paths=")
	for i, p := range t.Projected.Paths() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// appendRecord appends the value of o, with the text tokens of its body
// (index.TextTokens; none for a tomb), to dst.
func appendRecord(dst []byte, o *object.Object, text []string) []byte {
	s := o.Stored()
	e := recordEncoder{b: dst}
	e.b = append(e.b, recordVersion)
	e.string(string(s.UID))
	e.string(s.ResourceVersion)
	var created int64
	if !s.Created.IsZero() {
		created = s.Created.UnixNano()
	}
	e.uint(uint64(created)) // two's complement: times before 1970 too
	e.uint(uint64(len(s.Labels)))
	for _, l := range s.Labels {
		e.string(l.Key)
		e.string(l.Value)
	}
	e.uint(uint64(len(s.Owners)))
	for _, r := range s.Owners {
		e.string(r.APIVersion)
		e.string(r.Kind)
		e.string(r.Name)
		e.string(string(r.UID))
		c := byte(0)
		if r.Controller {
			c = 1
		}
		e.b = append(e.b, c)
	}
	e.uint(uint64(s.SpecAt))
	e.uint(uint64(s.StatusAt))
	e.string(s.Projected)
	e.uint(uint64(len(text)))
	for _, t := range text {
		e.string(t)
	}
	return append(e.b, s.Body...)
}

type recordEncoder struct{ b []byte }

func (e *recordEncoder) uint(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *recordEncoder) string(s string) { e.uint(uint64(len(s))); e.b = append(e.b, s...) }

var errRecord = errors.New("the record does not decode")

// decodeRecord reads the value of the object named namespace/name. The
// object's strings and body are copies; the text tokens point into b.
func decodeRecord(namespace, name string, b []byte) (object.Stored, []string, error) {
	d := recordDecoder{b: b}
	if v := d.byte(); v != recordVersion {
		return object.Stored{}, nil, errRecord
	}
	s := object.Stored{Meta: object.Meta{Namespace: namespace, Name: name}}
	s.UID = types.UID(d.string())
	s.ResourceVersion = d.string()
	if ns := int64(d.uint()); ns != 0 {
		s.Created = time.Unix(0, ns)
	}
	if n := d.count(); n > 0 {
		s.Labels = make(object.Labels, n)
		for i := range s.Labels {
			// Views: object.Restore interns them, which copies.
			s.Labels[i] = object.Label{Key: d.view(), Value: d.view()}
		}
	}
	if n := d.count(); n > 0 {
		s.Owners = make([]object.OwnerRef, n)
		for i := range s.Owners {
			s.Owners[i] = object.OwnerRef{APIVersion: d.view(), Kind: d.view(), Name: d.string(),
				UID: types.UID(d.string()), Controller: d.byte() == 1}
		}
	}
	s.SpecAt, s.StatusAt = uint32(d.uint()), uint32(d.uint())
	s.Projected = d.string()
	var text []string
	if n := d.count(); n > 0 {
		text = make([]string, n)
		for i := range text {
			text[i] = d.view()
		}
	}
	if d.bad {
		return object.Stored{}, nil, errRecord
	}
	if len(d.b) > 0 {
		s.Body = make(compact.Body, len(d.b))
		copy(s.Body, d.b)
	}
	return s, text, nil
}

// recordDecoder reads what recordEncoder wrote; a short or bad read sets
// bad and reads zeros from then on.
type recordDecoder struct {
	b   []byte
	bad bool
}

func (d *recordDecoder) byte() byte {
	if d.bad || len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *recordDecoder) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if d.bad || n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items of at least one byte each.
func (d *recordDecoder) count() int {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.bad = true
		return 0
	}
	return int(n)
}

// raw reads a string's bytes.
func (d *recordDecoder) raw() []byte {
	n := d.uint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *recordDecoder) string() string { return string(d.raw()) }

// view reads a string without copying it: valid while b is.
func (d *recordDecoder) view() string {
	r := d.raw()
	if len(r) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(r), len(r))
}
