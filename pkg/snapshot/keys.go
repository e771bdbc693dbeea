package snapshot

import (
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// The key space. Store keys (the format and the state) live in generation
// 0; a generation g ≥ 1 holds one snapshot, every key of it behind g as 4
// big-endian bytes, so that one range deletion drops a whole generation:
//
//	gen | 0x00 'c' resource                                         → a codec's dictionary
//	gen | cluster 0x00 resource 0x00 | 'm'                          → StreamMeta
//	gen | cluster 0x00 resource 0x00 | 'o' | namespace 0x00 name    → the object's value
//	gen | cluster 0x00 resource 0x00 | 't' | seq (8 bytes, BE)      → Tomb
//
// The codecs come first (a cluster's name is not empty). A stream's keys
// are contiguous and come in the order Load gives them: meta, objects by
// namespace and name, tombs oldest first. Byte order of
// "cluster 0x00 resource 0x00" is the order of (cluster, resource) as
// strings, the order of index.ClocksAt.
const (
	kindMeta   = 'm'
	kindObject = 'o'
	kindTomb   = 't'
	genBytes   = 4
)

var (
	formatKey = []byte("\x00\x00\x00\x00format")
	stateKey  = []byte("\x00\x00\x00\x00state")
)

// formatVersion is written at creation; a store holding another one is
// discarded with ErrFormat. Change it with any change of the key space or
// of a value's encoding.
const formatVersion = "fleetcache-snapshot/3"

func genPrefix(g uint32) []byte {
	return binary.BigEndian.AppendUint32(make([]byte, 0, 64), g)
}

// streamPrefix is gen | cluster 0x00 resource 0x00.
func streamPrefix(g uint32, k StreamKey) []byte {
	b := genPrefix(g)
	b = append(b, k.Cluster...)
	b = append(b, 0)
	b = append(b, k.Resource...)
	return append(b, 0)
}

// streamEnd is the first key after every key of the stream.
func streamEnd(g uint32, k StreamKey) []byte {
	b := streamPrefix(g, k)
	b[len(b)-1] = 1
	return b
}

func metaKey(g uint32, k StreamKey) []byte { return append(streamPrefix(g, k), kindMeta) }

// codecsPrefix is gen | 0x00 'c': the keys of codecs, before every stream.
func codecsPrefix(g uint32) []byte { return append(genPrefix(g), 0, 'c') }

func codecKey(g uint32, resource string) []byte { return append(codecsPrefix(g), resource...) }

// streamsStart is the first key of the streams of generation g, after its
// codecs.
func streamsStart(g uint32) []byte { return append(genPrefix(g), 1) }

func objectKey(g uint32, k ObjectKey) []byte {
	b := append(streamPrefix(g, k.Stream()), kindObject)
	b = append(b, k.Namespace...)
	b = append(b, 0)
	return append(b, k.Name...)
}

func tombKey(g uint32, k StreamKey, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(streamPrefix(g, k), kindTomb), seq)
}

// validKey reports whether the parts of a key can be coded: they hold no
// 0x00, and the stream's are not empty.
func validKey(k ObjectKey) error {
	if k.Cluster == "" || k.Resource == "" {
		return errors.New("a stream needs a cluster and a resource")
	}
	for _, s := range [...]string{k.Cluster, k.Resource, k.Namespace, k.Name} {
		if strings.IndexByte(s, 0) >= 0 {
			return errors.New("a key part holds a NUL byte")
		}
	}
	return nil
}

// parsedKey is a generation key taken apart.
type parsedKey struct {
	stream StreamKey
	kind   byte
	rest   []byte // namespace 0x00 name, or the tomb's sequence
}

func parseKey(key []byte) (parsedKey, bool) {
	if len(key) < genBytes {
		return parsedKey{}, false
	}
	b := key[genBytes:]
	c := indexByte(b, 0)
	if c <= 0 {
		return parsedKey{}, false
	}
	r := indexByte(b[c+1:], 0)
	if r <= 0 || c+1+r+1 >= len(b) {
		return parsedKey{}, false
	}
	p := parsedKey{
		stream: StreamKey{Cluster: string(b[:c]), Resource: string(b[c+1 : c+1+r])},
		kind:   b[c+1+r+1],
		rest:   b[c+1+r+2:],
	}
	return p, true
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// The values: unsigned varints and strings behind their length.

type encoder struct{ b []byte }

func (e *encoder) uint(v uint64)    { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)      { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) string(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bool(v bool)      { e.b = append(e.b, boolByte(v)) }
func (e *encoder) bytes(raw []byte) { e.b = append(e.b, raw...) }

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decoder reads what encoder wrote; the first short or bad read sets ok
// to false and every later read returns zero values.
type decoder struct {
	b  []byte
	ok bool
}

func newDecoder(b []byte) *decoder { return &decoder{b: b, ok: true} }

func (d *decoder) uint() uint64 { return varint(d, binary.Uvarint) }
func (d *decoder) int() int64   { return varint(d, binary.Varint) }

// varint reads a number with read, binary.Uvarint or binary.Varint.
func varint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if !d.ok {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.ok = false
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uint()
	if !d.ok || n > uint64(len(d.b)) {
		d.ok = false
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) bool() bool {
	if !d.ok || len(d.b) == 0 || d.b[0] > 1 {
		d.ok = false
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// done reports whether every read succeeded and nothing is left over.
func (d *decoder) done() bool { return d.ok && len(d.b) == 0 }

// state is what the store records of its generations.
type state struct {
	// cur is the generation Load reads; next, when not 0, the one a
	// rewrite (Reset) is filling.
	cur, next uint32
	// revision and epoch are those of the last batch applied to cur;
	// nextEpoch is Reset's, for the rewrite.
	revision         uint64
	epoch, nextEpoch string
}

func (s state) encode() []byte {
	var e encoder
	e.uint(uint64(s.cur))
	e.uint(uint64(s.next))
	e.uint(s.revision)
	e.string(s.epoch)
	e.string(s.nextEpoch)
	return e.b
}

func decodeState(b []byte) (state, bool) {
	d := newDecoder(b)
	s := state{cur: uint32(d.uint()), next: uint32(d.uint()), revision: d.uint(), epoch: d.string(), nextEpoch: d.string()}
	return s, d.done() && s.cur != 0
}

func encodeMeta(m StreamMeta) []byte {
	var e encoder
	e.string(m.Group)
	e.string(m.Version)
	e.string(m.Kind)
	e.bool(m.Namespaced)
	e.uint(m.Clock)
	e.uint(m.Since)
	e.uint(m.Pruned)
	e.bool(m.Removed)
	e.int(unixNano(m.AsOf))
	e.string(m.Member)
	e.string(m.Derivation)
	return e.b
}

// unixNano is t as Unix nanoseconds, 0 for the zero time (whose UnixNano
// is not defined); fromUnixNano is its inverse.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func decodeMeta(k StreamKey, b []byte) (StreamMeta, bool) {
	d := newDecoder(b)
	m := StreamMeta{StreamKey: k, Group: d.string(), Version: d.string(), Kind: d.string(), Namespaced: d.bool(),
		Clock: d.uint(), Since: d.uint(), Pruned: d.uint(), Removed: d.bool(), AsOf: fromUnixNano(d.int()), Member: d.string(),
		Derivation: d.string()}
	return m, d.done()
}

func encodeTomb(t Tomb) []byte {
	e := encoder{b: make([]byte, 0, 32+len(t.Namespace)+len(t.Name)+len(t.Value))}
	e.string(t.Namespace)
	e.string(t.Name)
	e.uint(t.RV)
	e.int(unixNano(t.At))
	e.bytes(t.Value)
	return e.b
}

// decodeTomb fills t from b; t.Value points into b.
func decodeTomb(t *Tomb, b []byte) bool {
	d := newDecoder(b)
	t.Namespace, t.Name, t.RV = d.string(), d.string(), d.uint()
	t.At = fromUnixNano(d.int())
	t.Value = d.b
	return d.ok
}
