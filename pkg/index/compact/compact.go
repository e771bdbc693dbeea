package compact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// The forms of a Body, told by its first byte. JSON never begins with a
// control character, so a plain body is the JSON itself, without a copy
// or a header; only bytes that happen to begin with one of these markers
// are stored behind the marker escaped.
const (
	// s2Dict: an S2 block compressed against the Codec's dictionary follows.
	s2Dict byte = 1
	// escaped: the bytes follow as they are.
	escaped byte = 2
	// dropped: the body was not kept (the index's memory budget); the
	// Body is this one byte.
	dropped byte = 3
	// s2Parts: the JSON in two parts, each an S2 block compressed against
	// the Codec's dictionary, so that a reader of the second (an object's
	// status) decodes that part only. Behind the marker: where in the JSON
	// the second part begins and the first block's length (uvarints), the
	// first block, the second.
	s2Parts byte = 4
)

// Dropped is the Body of an object whose JSON was not kept: a reader
// builds what it can from the object's metadata instead.
var Dropped = Body{dropped}

// Defaults of a Codec's training.
const (
	// TrainBytes is how many bytes of sample bodies a Codec collects
	// before it builds its dictionary: S2's largest dictionary.
	TrainBytes = s2.MaxDictSize
	// maxSample bounds the part of one body taken as a sample, so that one
	// huge object does not make the whole dictionary.
	maxSample = 8 << 10
)

// Body is an object's JSON in the form a Codec stored it: plain or
// compressed, as its first byte says. A nil Body is an empty document.
type Body []byte

// Plain returns raw as a Body that is not compressed, for objects whose
// type has no Codec. It copies nothing when raw is JSON (and raw must not
// change afterwards then).
func Plain(raw []byte) Body {
	if len(raw) == 0 {
		return nil
	}
	if raw[0] < s2Dict || raw[0] > s2Parts {
		return Body(raw)
	}
	b := make(Body, 1+len(raw))
	b[0] = escaped
	copy(b[1:], raw)
	return b
}

// Compressed reports whether the body is compressed.
func (b Body) Compressed() bool { return len(b) > 0 && (b[0] == s2Dict || b[0] == s2Parts) }

// Split returns where in the JSON the second part of a body stored in two
// parts (EncodeParts) begins, 0 for a body in one part.
func (b Body) Split() int {
	at, _, _, ok := b.parts()
	if !ok {
		return 0
	}
	return at
}

// parts returns the two blocks of a body in two parts and where the
// second begins in the JSON; ok is false for any other body.
func (b Body) parts() (at int, first, second []byte, ok bool) {
	if len(b) == 0 || b[0] != s2Parts {
		return 0, nil, nil, false
	}
	rest := b[1:]
	a, n := binary.Uvarint(rest)
	if n <= 0 {
		return 0, nil, nil, false
	}
	rest = rest[n:]
	l, n := binary.Uvarint(rest)
	if n <= 0 || uint64(len(rest)-n) < l {
		return 0, nil, nil, false
	}
	rest = rest[n:]
	return int(a), rest[:l], rest[l:], true
}

// Dropped reports whether the body is Dropped: the JSON was not kept.
func (b Body) Dropped() bool { return len(b) == 1 && b[0] == dropped }

// Size is how many bytes the body holds.
func (b Body) Size() int { return cap(b) }

// ErrCorrupt reports a body that does not decode.
var ErrCorrupt = errors.New("compact: corrupt body")

// Codec compresses the bodies of one resource type. It is safe for
// concurrent use.
type Codec struct {
	resource   string
	trainBytes int
	// dict is set once, when training ends.
	dict atomic.Pointer[dictionary]

	mu      sync.Mutex
	samples [][]byte // the samples collected so far, until trained
	sampled int      // their size in bytes

	// recent holds the bodies DecodeShared decoded last: the registry's,
	// shared by its Codecs, or the Codec's own.
	recent *recentBodies
}

// NewCodec returns a Codec for one resource type, untrained, that trains
// on the first trainBytes bytes of bodies (0: TrainBytes).
func NewCodec(resource string, trainBytes int) *Codec {
	return newCodec(resource, trainBytes, new(recentBodies))
}

// newCodec is NewCodec with the cache of decoded bodies it uses.
func newCodec(resource string, trainBytes int, recent *recentBodies) *Codec {
	if trainBytes <= 0 {
		trainBytes = TrainBytes
	}
	return &Codec{resource: resource, trainBytes: trainBytes, recent: recent}
}

// Resource is the resource name the Codec serves.
func (c *Codec) Resource() string { return c.resource }

// Trained reports whether the Codec has built its dictionary.
func (c *Codec) Trained() bool { return c.dict.Load() != nil }

// Dict returns the Codec's dictionary as Adopt takes it, nil before
// training: what a snapshot keeps so that its bodies decode in another
// process.
func (c *Codec) Dict() []byte {
	if d := c.dict.Load(); d != nil {
		return d.Bytes()
	}
	return nil
}

// Adopt makes dict, a dictionary Dict returned (in this process or
// another), the Codec's, so that the bodies compressed with it decode and
// new ones are compressed with it too. It reports false, and changes
// nothing, when dict does not decode or the Codec has another dictionary
// already; samples collected for training are dropped.
func (c *Codec) Adopt(dict []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.dict.Load(); d != nil {
		return bytes.Equal(d.Bytes(), dict)
	}
	d := s2.NewDict(bytes.Clone(dict)) // it keeps the bytes
	if d == nil {
		return false
	}
	c.dict.Store(newDictionary(d))
	c.samples, c.sampled = nil, 0
	return true
}

// Encode returns raw, an object's JSON, as a Body: compressed once the
// Codec is trained and when that makes it smaller, plain otherwise (see
// Plain: a plain Body may be raw itself, which must not change then). A
// nil Codec stores plain bodies.
func (c *Codec) Encode(raw []byte) Body {
	return c.EncodeParts(raw, 0)
}

// EncodeParts is Encode, storing a compressed body in two parts, raw[:at]
// and raw[at:], when 0 < at < len(raw): DecodeSecond then decodes the
// second alone. For an object, at is where the value of status begins: a
// read of a status field decodes a third of a Pod instead of all of it,
// for about 4 % more bytes.
func (c *Codec) EncodeParts(raw []byte, at int) Body {
	if c == nil || len(raw) == 0 {
		return Plain(raw)
	}
	d := c.dict.Load()
	if d == nil {
		d = c.sample(raw)
	}
	if d == nil {
		return Plain(raw)
	}
	if at <= 0 || at >= len(raw) {
		at = 0
	}
	var headBuf [1 + 2*binary.MaxVarintLen64]byte
	head := headBuf[:1]
	if at > 0 {
		head[0] = s2Parts
		head = binary.AppendUvarint(head, uint64(at))
	} else {
		head[0] = s2Dict
		at = len(raw)
	}
	// One buffer of the worst case for both blocks (S2 encodes into dst
	// only when its length is the worst case), then a copy of the exact
	// size: the worst case is larger than the raw JSON. S2's fast mode,
	// not EncodeBetter: the better mode clears 576 KB of hash tables for
	// each block, 4 times the fast mode's time on a 3 KB Pod, for bodies
	// only 3 % smaller.
	n := s2.MaxEncodedLen(at)
	scratch := encodeBuffers.Get().(*[]byte)
	buf := grow((*scratch)[:0], n+s2.MaxEncodedLen(len(raw)-at))
	if cap(buf) <= maxPooledBuffer {
		*scratch = buf
		defer encodeBuffers.Put(scratch)
	}
	e := encoders.Get().(*encoder)
	first := e.encode(buf[:0:n], raw[:at], d)
	var second []byte
	if at < len(raw) {
		second = e.encode(buf[n:n], raw[at:], d)
		head = binary.AppendUvarint(head, uint64(len(first)))
	}
	encoders.Put(e)
	size := len(head) + len(first) + len(second)
	if size >= len(raw) {
		return Plain(raw)
	}
	b := make(Body, 0, size)
	b = append(b, head...)
	b = append(b, first...)
	return append(b, second...)
}

// encodeBuffers hold the worst case of EncodeParts' blocks: a fresh one,
// twice a body's size, was cleared and collected for every object.
// Those of bodies over maxPooledBuffer (a large ConfigMap) are not kept.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBuffer = 256 << 10

// sample keeps a copy of (the start of) raw as a training sample and
// builds the dictionary once there are TrainBytes of them; it returns the
// dictionary if there is one now.
func (c *Codec) sample(raw []byte) *dictionary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.dict.Load(); d != nil {
		return d
	}
	c.samples = append(c.samples, bytes.Clone(raw[:min(len(raw), maxSample)]))
	c.sampled += min(len(raw), maxSample)
	if c.sampled < c.trainBytes {
		return nil
	}
	trained := train(c.samples)
	c.samples, c.sampled = nil, 0
	if trained == nil {
		return nil
	}
	d := newDictionary(trained)
	c.dict.Store(d)
	return d
}

// train builds a dictionary from samples: their concatenation, the
// latest last (S2 reaches the end of a dictionary with the shortest
// offsets), cut to S2's largest dictionary. The repeat offset starts at
// the common beginning of the bodies ({"apiVersion":"v1","kind":"Pod",…).
func train(samples [][]byte) *s2.Dict {
	var data []byte
	for _, s := range samples {
		data = append(data, s...)
	}
	first := samples[len(samples)-1]
	return s2.MakeDict(data, first[:min(len(first), 64)])
}

// Decode appends the JSON of b to dst and returns it. A plain body's JSON
// is appended too; use View to read one without copying.
func (c *Codec) Decode(dst []byte, b Body) ([]byte, error) {
	if raw, ok := View(b); ok {
		return append(dst, raw...), nil
	}
	if _, first, second, ok := b.parts(); ok {
		start := len(dst)
		// Room for both parts at once: the second would otherwise grow
		// the buffer of the first to twice its size.
		n1, err1 := s2.DecodedLen(first)
		n2, err2 := s2.DecodedLen(second)
		if err1 == nil && err2 == nil {
			dst = grow(dst, n1+n2)[:start]
		}
		dst, err := c.decodeBlock(dst, first)
		if err != nil {
			return dst[:start], err
		}
		return c.decodeBlock(dst, second)
	}
	if c == nil || b[0] != s2Dict {
		return dst, fmt.Errorf("%w: a body of form %d without a codec, or dropped", ErrCorrupt, b[0])
	}
	return c.decodeBlock(dst, b[1:])
}

// DecodeSecond appends the second part of a body stored in two parts
// (EncodeParts), the JSON from b.Split() on, to dst and returns it.
func (c *Codec) DecodeSecond(dst []byte, b Body) ([]byte, error) {
	_, _, second, ok := b.parts()
	if !ok {
		return dst, fmt.Errorf("%w: not a body in two parts", ErrCorrupt)
	}
	return c.decodeBlock(dst, second)
}

// decodeBlock appends the JSON of one S2 block to dst.
func (c *Codec) decodeBlock(dst, block []byte) ([]byte, error) {
	if c == nil {
		return dst, fmt.Errorf("%w: a compressed body without a codec", ErrCorrupt)
	}
	d := c.dict.Load()
	if d == nil {
		return dst, fmt.Errorf("%w: compressed body of %s before training", ErrCorrupt, c.resource)
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	start := len(dst)
	dst = grow(dst, n)
	out, err := d.Decode(dst[start:start+n], block)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return dst[:start+len(out)], nil
}

// View returns the JSON of a plain body without copying it, and false
// for a compressed one.
func View(b Body) ([]byte, bool) {
	switch {
	case len(b) == 0:
		return nil, true
	case b[0] == s2Dict, b[0] == s2Parts, b.Dropped():
		return nil, false
	case b[0] == escaped:
		return b[1:], true
	}
	return b, true
}

// grow extends dst by n bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst[:len(dst)+n]
	}
	out := make([]byte, len(dst)+n, max(2*cap(dst), len(dst)+n))
	copy(out, dst)
	return out
}

// Codecs hands out one Codec per resource type. It is safe for concurrent
// use; the zero value is ready.
type Codecs struct {
	// TrainBytes is how many bytes of bodies each Codec trains on.
	// Default TrainBytes; tests set less, so that a few objects are
	// enough to compress the rest.
	TrainBytes int

	m sync.Map // resource name -> *Codec

	// recent is the cache of decoded bodies the Codecs share.
	recentOnce sync.Once
	recent     *recentBodies
}

// For returns the Codec of resource (a kubectl name: "pods"), creating it
// on first use.
func (cs *Codecs) For(resource string) *Codec {
	if c, ok := cs.m.Load(resource); ok {
		return c.(*Codec)
	}
	cs.recentOnce.Do(func() { cs.recent = new(recentBodies) })
	actual, _ := cs.m.LoadOrStore(resource, newCodec(resource, cs.TrainBytes, cs.recent))
	return actual.(*Codec)
}
