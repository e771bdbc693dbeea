package fieldpath

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The walk of a Set over an object's JSON text. A Set's paths go through
// nested members (spec.containers[].image): the walk descends into the
// members its paths need and skips the others, so that each byte is read
// once. Reading one member at a time, as a lookup does, reads a nested
// value once for each level above it (to find its end, then to read it).
// The text is the stored one, valid JSON as the wire layer checked it; on
// other bytes the walk finds garbage or nothing, never panics, and always
// moves forward.

// walkAt appends the values of the paths that end at n or after it, the
// value at n starting at or after b[i]; it returns where that value ends.
func (n *setNode) walkAt(b []byte, i int, dst []found) (int, []found) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, dst
	}
	if len(n.ends) > 0 {
		end := valueEnd(b, i)
		if v, ok := leafValue(b[i:end]); ok {
			for _, p := range n.ends {
				dst = append(dst, found{p, v})
			}
		}
		if n.each == nil && len(n.keys) == 0 {
			return end, dst
		}
		// Paths go on below a value another path ends at (rare): the
		// children read it again.
		_, dst = n.childrenAt(b[:end], i, dst)
		return end, dst
	}
	return n.childrenAt(b, i, dst)
}

// walkFrom is walkAt for a caller that needs no end (the value of a
// top-level member found by its offset): the members of an object are
// read only until every key below n has been seen, so that the paths into
// status stop at status.phase instead of reading the rest of it.
func (n *setNode) walkFrom(b []byte, i int, dst []found) []found {
	if i = skipSpace(b, i); len(n.ends) > 0 {
		_, dst = n.walkAt(b, i, dst)
		return dst
	}
	return n.childrenFrom(b, i, dst)
}

// childrenFrom is childrenAt for a caller that needs no end.
func (n *setNode) childrenFrom(b []byte, i int, dst []found) []found {
	if i < len(b) && b[i] == '{' && len(n.keys) > 0 {
		_, dst = n.membersAt(b, i+1, dst, 0, true)
		return dst
	}
	_, dst = n.childrenAt(b, i, dst)
	return dst
}

// childrenAt is walkAt for the paths that go on after n, b[i] being the
// first byte of the value at n.
func (n *setNode) childrenAt(b []byte, i int, dst []found) (int, []found) {
	switch {
	case i >= len(b):
		return i, dst
	case b[i] == '[' && n.each != nil:
		i++
		for {
			if i = skipSpace(b, i); i >= len(b) {
				return i, dst
			}
			if b[i] == ']' {
				return i + 1, dst
			}
			if i, dst = n.each.walkAt(b, i, dst); i >= len(b) {
				return i, dst
			}
			if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
				i++
				continue
			}
			// The array's end, or garbage: skip it as a value would be.
			return closeEnd(b, i, ']'), dst
		}
	case b[i] == '{' && len(n.keys) > 0:
		return n.membersAt(b, i+1, dst, 0, false)
	}
	return valueEnd(b, i), dst
}

// membersAt walks the members of the object whose first member is at or
// after b[i], into the values of n's keys but those seen marks (by their
// index in n.keys); the first of repeated keys counts, as a lookup finds
// it. With stop, it returns once it has seen every key: the caller needs
// no end.
func (n *setNode) membersAt(b []byte, i int, dst []found, seen uint64, stop bool) (int, []found) {
	all := uint64(1)<<len(n.keys) - 1
	for {
		if stop && len(n.keys) <= 64 && seen == all {
			return i, dst
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, dst
		}
		if b[i] == '}' {
			return i + 1, dst
		}
		if b[i] != '"' {
			return closeEnd(b, i, '}'), dst
		}
		keyEnd := stringEnd(b, i)
		key := b[i+1 : max(i+1, keyEnd-1)]
		if i = skipSpace(b, keyEnd); i >= len(b) || b[i] != ':' {
			return closeEnd(b, i, '}'), dst
		}
		i++
		var next *setNode
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(gjson.ParseBytes(b[keyEnd-len(key)-2 : keyEnd]).Str)
		}
		for k := range n.keys {
			if n.keys[k].key == string(key) {
				if k >= 64 || seen&(1<<k) == 0 {
					next = n.keys[k].next
					if k < 64 {
						seen |= 1 << k
					}
				}
				break
			}
		}
		if next != nil {
			i, dst = next.walkAt(b, i, dst)
		} else {
			i = valueEnd(b, skipSpace(b, i))
		}
		if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
			i++
			continue
		}
		return closeEnd(b, i, '}'), dst
	}
}

// leafValue returns the value whose JSON text is raw; false for null and
// for no text.
func leafValue(raw []byte) (Value, bool) {
	if len(raw) == 0 {
		return Value{}, false
	}
	s := unsafe.String(unsafe.SliceData(raw), len(raw))
	switch raw[0] {
	case '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			return Value{Kind: String, Str: s[1 : len(s)-1], raw: s}, true
		}
	case '{':
		return Value{Kind: Object, raw: s}, true
	case '[':
		return Value{Kind: Array, raw: s}, true
	}
	// Escaped strings, numbers and literals, read as a lookup reads them.
	return valueOf(gjson.Parse(s))
}

// skipSpace returns the offset of the first byte at or after i that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// valueEnd returns where the value that starts at b[i] ends.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		return containerEnd(b, i)
	}
	for i < len(b) && !scalarEnds[b[i]] {
		i++
	}
	return i
}

// scalarEnds marks the bytes that end a number or a literal.
var scalarEnds = func() (t [256]bool) {
	for _, c := range " \t\r\n,:]}[{\"" {
		t[c] = true
	}
	return t
}()

// stringEnd returns the offset after the closing quote of the string that
// starts at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	i++
	for {
		// Eight bytes at a time while they hold no quote or backslash;
		// the lowest byte hasZero marks is the first such byte.
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			if m := hasZero(x^(ones*'"')) | hasZero(x^(ones*'\\')); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		switch {
		case i >= len(b):
			return len(b)
		case b[i] == '"':
			return i + 1
		}
		i += 2 // a backslash and the byte it escapes
	}
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// hasZero is not 0 if a byte of x is 0: it sets the high bit of the
// first such byte, and may set those of bytes after it (borrows), never
// those before.
func hasZero(x uint64) uint64 { return (x - ones) &^ x & highs }

// containerEnd returns the offset after the object or array that starts
// at b[i].
func containerEnd(b []byte, i int) int { return closingEnd(b, i+1) }

// closeEnd returns the offset after the close byte that ends the
// container the walk is in, at b[i] or, when the text is not valid JSON
// there, after garbage.
func closeEnd(b []byte, i int, close byte) int {
	if i < len(b) && b[i] == close {
		return i + 1
	}
	return closingEnd(b, i)
}

// closingEnd returns the offset after the bracket that closes the
// container b[i] is in, brackets counted outside strings.
func closingEnd(b []byte, i int) int {
	depth := 1
	for i < len(b) {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(b)
}
