package compact

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/s2"
)

// The encoder a Codec compresses with. It writes S2 blocks against a
// dictionary, the format s2.Dict.Decode reads (literals; copies with
// 1-, 2- and 4-byte offsets; repeats of the last offset; offsets beyond
// the block's start reaching into the dictionary), as s2.Dict.Encode
// does, but keeps its hash table from one block to the next: s2's
// encoder declares a 64 KB table for each block, and clearing it was half
// the time spent compressing a Pod (two blocks, see EncodeParts). The
// entries of earlier blocks are told apart by a base that each block
// moves past the positions of the one before.

const (
	tableBits = 14
	tableSize = 1 << tableBits
	// minBlock is the shortest input searched for matches: shorter ones
	// are one literal.
	minBlock = 16
	// maxBlock is the longest input searched for matches (positions are
	// 32 bits): longer ones, which no Kubernetes object is, are one
	// literal.
	maxBlock = 1 << 30
)

// dictionary is a Codec's dictionary with what the encoder reads of it.
type dictionary struct {
	*s2.Dict // what decodes the blocks
	data     []byte
	// repeat is the offset the decoder repeats before any copy.
	repeat int
	// table maps the hash of 6 bytes to the last position in data
	// holding them, plus 1 (0: none).
	table [tableSize]uint32
}

// newDictionary returns d as the encoder reads it.
func newDictionary(d *s2.Dict) *dictionary {
	b := d.Bytes()
	r, n := binary.Uvarint(b)
	data := b[n:]
	dict := &dictionary{Dict: d, data: data, repeat: len(data) - int(r)}
	for p := 0; p+8 <= len(data); p++ {
		dict.table[hash6(load64(data, p))] = uint32(p + 1)
	}
	return dict
}

// encoder compresses one block at a time; it is not safe for concurrent
// use (encoders pools them).
type encoder struct {
	// table maps the hash of 6 bytes to base plus their last position in
	// the block; entries below base are of earlier blocks.
	table [tableSize]uint32
	base  uint32
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// encode appends the S2 block of src compressed against d to dst, which
// has room for s2.MaxEncodedLen(len(src)) bytes.
func (e *encoder) encode(dst, src []byte, d *dictionary) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	if len(src) < minBlock || len(src) > maxBlock {
		return appendLiteral(dst, src)
	}
	if uint64(e.base)+uint64(len(src)) >= math.MaxUint32 {
		clear(e.table[:])
		e.base = 0
	}
	// Positions of this block are base+1 on: 0 is no entry.
	base := e.base + 1
	e.base = base + uint32(len(src))

	offset := d.repeat // the decoder's last offset
	nextEmit, s := 0, 0
	for s+8 <= len(src) {
		cv := load64(src, s)
		h := hash6(cv)
		candidate := e.table[h]
		e.table[h] = base + uint32(s)
		// The last offset first, whose repeat takes two bytes; then the
		// block's last position with the same hash; then the
		// dictionary's. Four bytes are compared before a match is
		// measured: most candidates fail there.
		o, n := offset, 0
		if uint32(cv) == d.load32At(src, s, o) {
			n = d.matchAt(src, s, o)
		}
		if n < 4 && candidate >= base {
			o = s - int(candidate-base)
			n = d.matchAt(src, s, o)
		}
		if n < 4 && s <= s2.MaxDictSrcOffset {
			if p := d.table[h]; p > 0 {
				o = len(d.data) - int(p-1) + s
				n = d.matchAt(src, s, o)
			}
		}
		if n < 4 || o >= 1<<16 && n < 8 {
			// (A copy with a 4-byte offset takes 5 bytes.) The longer
			// the run without a match, the larger the steps:
			// incompressible bytes are skipped fast.
			s += 1 + (s-nextEmit)>>5
			continue
		}
		// The match may begin before s, where the literal would.
		for s > nextEmit && d.extendsBack(src, s, o) {
			s--
			n++
		}
		dst = appendLiteral(dst, src[nextEmit:s])
		if o == offset {
			dst = appendRepeat(dst, n)
		} else {
			dst = appendCopy(dst, o, n)
		}
		offset = o
		s += n
		nextEmit = s
		// The match's last positions, for the matches that follow.
		if p := s - 2; p+8 <= len(src) {
			e.table[hash6(load64(src, p))] = base + uint32(p)
		}
	}
	return appendLiteral(dst, src[nextEmit:])
}

// matchAt returns how many bytes from src[s] on a copy at offset o
// reproduces, as the decoder reads it: from the block when o <= s, from
// the dictionary otherwise, within it and only for s up to
// s2.MaxDictSrcOffset.
func (d *dictionary) matchAt(src []byte, s, o int) int {
	switch {
	case o <= 0:
		return 0
	case o <= s:
		return matchLen(src[s-o:], src[s:])
	case s > s2.MaxDictSrcOffset:
		return 0
	}
	p := len(d.data) - o + s
	if p < 0 {
		return 0
	}
	return matchLen(d.data[p:], src[s:])
}

// extendsBack reports whether the copy at offset o that begins at src[s]
// may begin a byte earlier: the byte before matches, and the copy stays
// wholly in the block or wholly in the dictionary.
func (d *dictionary) extendsBack(src []byte, s, o int) bool {
	if o <= s-1 {
		return src[s-1-o] == src[s-1]
	}
	if o <= s {
		return false // it would begin in the dictionary and end in the block
	}
	p := len(d.data) - o + s - 1
	return p >= 0 && d.data[p] == src[s-1]
}

// matchLen returns how many bytes a and b have in common from their
// start.
func matchLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := load64(a, i) ^ load64(b, i); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// appendLiteral appends lit as literal bytes.
func appendLiteral(dst, lit []byte) []byte {
	n := len(lit) - 1
	switch {
	case len(lit) == 0:
		return dst
	case n < 60:
		dst = append(dst, byte(n)<<2)
	case n < 1<<8:
		dst = append(dst, 60<<2, byte(n))
	case n < 1<<16:
		dst = append(dst, 61<<2, byte(n), byte(n>>8))
	case n < 1<<24:
		dst = append(dst, 62<<2, byte(n), byte(n>>8), byte(n>>16))
	default:
		dst = append(dst, 63<<2, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	return append(dst, lit...)
}

// appendCopy appends a copy of length bytes (4 or more) at offset o: in
// one element up to 64 bytes, the rest as a repeat.
func appendCopy(dst []byte, o, length int) []byte {
	if o < 2048 && length <= 11 {
		return append(dst, byte(o>>8)<<5|byte(length-4)<<2|1, byte(o))
	}
	first := length
	if first > 64 {
		first = 64
		if length-first < 4 {
			first = length - 4 // a repeat is 4 bytes or more
		}
	}
	if o < 1<<16 {
		dst = append(dst, byte(first-1)<<2|2, byte(o), byte(o>>8))
	} else {
		dst = append(dst, byte(first-1)<<2|3, byte(o), byte(o>>8), byte(o>>16), byte(o>>24))
	}
	if first < length {
		dst = appendRepeat(dst, length-first)
	}
	return dst
}

// appendRepeat appends a copy of length bytes (4 or more) at the last
// offset.
func appendRepeat(dst []byte, length int) []byte {
	const most = 4 + 1<<16 + 1<<24 - 1 // in one element
	for length > most {
		n := min(length-4, most) // the last is 4 bytes or more too
		dst = appendRepeat(dst, n)
		length -= n
	}
	switch {
	case length <= 8:
		return append(dst, byte(length-4)<<2|1, 0)
	case length < 8+1<<8:
		return append(dst, 5<<2|1, 0, byte(length-8))
	case length < 260+1<<16:
		n := length - 260
		return append(dst, 6<<2|1, 0, byte(n), byte(n>>8))
	}
	n := length - (4 + 1<<16)
	return append(dst, 7<<2|1, 0, byte(n), byte(n>>8), byte(n>>16))
}

// hash6 hashes the low 6 bytes of u to tableBits bits.
func hash6(u uint64) uint32 {
	const prime6bytes = 227718039650203
	return uint32(((u << 16) * prime6bytes) >> (64 - tableBits))
}

func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

// load32At returns the 4 bytes a copy at offset o reproduces at src[s]
// (as matchAt reads them), or a value unequal to src's there when it
// reproduces none or fewer than 8 bytes are left in the dictionary.
func (d *dictionary) load32At(src []byte, s, o int) uint32 {
	switch {
	case o <= 0:
	case o <= s:
		return uint32(load64(src, s-o))
	case s > s2.MaxDictSrcOffset:
	default:
		if p := len(d.data) - o + s; p >= 0 && p+8 <= len(d.data) {
			return uint32(load64(d.data, p))
		}
	}
	return ^uint32(load64(src, s))
}
