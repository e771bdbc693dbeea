package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// errIncomplete is a document that ends before its last value does: a
// watch frame that continues on the next line.
var errIncomplete = errors.New("unexpected end of JSON input")

// syntaxError reports invalid JSON at offset i.
func syntaxError(i int, what string) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", i, what)
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// skipSpace returns the offset of the first byte at or after i that is
// not whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// expect skips whitespace and the byte c; it returns the offset after c.
func expect(b []byte, i int, c byte) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, errIncomplete
	}
	if b[i] != c {
		return i, syntaxError(i, fmt.Sprintf("want %q, got %q", c, b[i]))
	}
	return i + 1, nil
}

// scanString reads the string that starts at b[i] == '"'. It returns the
// offset after its closing quote and whether it holds escapes. Control
// characters, which JSON requires escaped, are refused.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	i++ // the opening quote
	for {
		i = plainRun(b, i)
		for i < len(b) && !stringSpecial[b[i]] {
			i++
		}
		if i >= len(b) {
			return len(b), escaped, errIncomplete
		}
		switch b[i] {
		case '"':
			return i + 1, escaped, nil
		case '\\':
		default:
			return i, escaped, syntaxError(i, "control character in a string")
		}
		escaped = true
		i++ // at the escaped byte
		if i >= len(b) {
			return len(b), true, errIncomplete
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+5 > len(b) {
				return len(b), true, errIncomplete
			}
			for _, h := range b[i+1 : i+5] {
				if !isHex(h) {
					return i, true, syntaxError(i, "invalid \\u escape")
				}
			}
			i += 5
		default:
			return i, true, syntaxError(i, "invalid escape")
		}
	}
}

// plainRun returns the offset of the first quote, backslash or control
// character at or after i, in the first 8-byte word that holds one, or
// where fewer than 8 bytes are left: strings are most of an object's
// bytes, and most of a string's words hold none of them.
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// A byte below 0x20, or a zero byte in q or bs (a quote or a
		// backslash in x), sets its high bit here; bytes after the first
		// such byte may too (borrows), bytes before it never.
		if m := (x-ones*0x20)&^x&highs | (q-ones)&^q&highs | (bs-ones)&^bs&highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	return i
}

// ones and highs are a byte's lowest and highest bit in each byte of a
// word, for reading eight bytes at a time: (x-ones*c)&^x&highs sets the
// high bit of the first byte of x below c, and may set those of bytes
// after it (borrows), never those before.
const ones, highs = 0x0101010101010101, 0x8080808080808080

// stringSpecial marks the bytes that end a run of plain string bytes: the
// quote, the backslash and control characters.
var stringSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// stringValue returns the text of the string b[start:end] (quotes
// included), unescaped if it holds escapes.
func stringValue(b []byte, start, end int, escaped bool) (string, error) {
	if !escaped {
		return string(b[start+1 : end-1]), nil
	}
	var s string
	if err := json.Unmarshal(b[start:end], &s); err != nil {
		return "", syntaxError(start, err.Error())
	}
	return s, nil
}

// skipValue reads the value that starts at or after b[i] (whitespace
// first is skipped). It returns where the value starts and ends, and
// whether whitespace occurs inside it outside strings (the value is then
// not compact). Objects and arrays are checked for matching brackets,
// strings for their escapes, literals and numbers for their characters;
// separators inside containers are checked as a well-formed sequence.
func (s *scanner) skipValue(b []byte, i int) (start, end int, spaced bool, err error) {
	return s.walkValue(b, i, fieldpath.Node{}, nil)
}

// walkValue is skipValue that also records in f the values of the paths
// from n on, the value being at n (the zero Node: none); they point into b.
func (s *scanner) walkValue(b []byte, i int, n fieldpath.Node, f *fieldpath.Found) (start, end int, spaced bool, err error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, i, false, errIncomplete
	}
	start = i
	switch c := b[i]; {
	case c == '"':
		end, _, err = scanString(b, i)
	case c == '{' || c == '[':
		end, spaced, err = s.walkContainer(b, i, n, f)
		return start, end, spaced, err
	default:
		end, err = scalar(b, i)
	}
	if err == nil && !n.IsZero() {
		f.Add(n, b[start:end])
	}
	return start, end, false, err
}

// scalar reads the literal or number at b[i].
func scalar(b []byte, i int) (int, error) {
	switch c := b[i]; {
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return number(b, i)
	default:
		return i, syntaxError(i, fmt.Sprintf("unexpected %q", c))
	}
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) {
		if string(b[i:]) == lit[:len(b)-i] {
			return len(b), errIncomplete
		}
		return i, syntaxError(i, "invalid literal")
	}
	if string(b[i:i+len(lit)]) != lit {
		return i, syntaxError(i, "invalid literal")
	}
	return i + len(lit), nil
}

// number reads the number at b[i] by JSON's grammar. A number that
// reaches the end of b is incomplete: it may go on in the next line.
func number(b []byte, i int) (int, error) {
	digits := func(i int) int {
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, errIncomplete
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(i)
	default:
		return i, syntaxError(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		start := i + 1
		if i = digits(start); i == start {
			if i >= len(b) {
				return i, errIncomplete
			}
			return i, syntaxError(i, "invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		if i = digits(start); i == start {
			if i >= len(b) {
				return i, errIncomplete
			}
			return i, syntaxError(i, "invalid number")
		}
	}
	if i >= len(b) {
		return i, nil
	}
	if c := b[i]; !(c == ',' || c == '}' || c == ']' || isSpace(c)) {
		return i, syntaxError(i, "invalid number")
	}
	return i, nil
}

// scanner holds the state the scan of a container reuses.
type scanner struct {
	// stack holds the open containers of the value being scanned.
	stack []frame
}

// frame is a container open in a scan.
type frame struct {
	// node is the container's place in the paths walkContainer records,
	// zero when none goes into it.
	node fieldpath.Node
	// seen marks the members of node an object has had (Node.Member).
	seen uint64
	// at is where the container begins.
	at   int
	open byte
}

// member returns the Node of the member key of the object fr, zero for a
// key it has had before.
func (fr *frame) member(key []byte) fieldpath.Node {
	n, k := fr.node.Member(key)
	if k >= 0 && k < 64 {
		if fr.seen&(1<<k) != 0 {
			return fieldpath.Node{}
		}
		fr.seen |= 1 << k
	}
	return n
}

// What walkContainer expects next.
const (
	wantValueOrClose = iota // after '[': a value or ']'
	wantKeyOrClose          // after '{': a key or '}'
	wantKey                 // after ',' in an object
	wantColon               // after a key
	wantValue               // after ':' or ',' in an array
	wantCommaOrClose        // after a value
)

// walkContainer reads the object or array that starts at b[i], at n in the
// paths whose values it records in f. Following the paths costs a scan
// that none goes into (skipValue's) a test of each key and value.
func (s *scanner) walkContainer(b []byte, i int, n fieldpath.Node, f *fieldpath.Found) (end int, spaced bool, err error) {
	s.stack = s.stack[:0]
	state := wantValueOrClose
	// next is the Node of the value that comes next.
	next := n
	for i < len(b) {
		c := b[i]
		switch c {
		case ' ', '\n', '\r', '\t':
			spaced = true
			i++
			continue
		case '"':
			isKey := state == wantKeyOrClose || state == wantKey
			if !isKey && state != wantValueOrClose && state != wantValue {
				return i, spaced, syntaxError(i, "unexpected string")
			}
			end, escaped, err := scanString(b, i)
			if err != nil {
				return end, spaced, err
			}
			if isKey {
				state = wantColon
				if top := &s.stack[len(s.stack)-1]; !top.node.IsZero() {
					key := b[i+1 : end-1]
					if escaped {
						k, err := stringValue(b, i, end, true)
						if err != nil {
							return i, spaced, err
						}
						key = []byte(k)
					}
					next = top.member(key)
				}
			} else {
				state = wantCommaOrClose
				if !next.IsZero() {
					f.Add(next, b[i:end])
					next = fieldpath.Node{}
				}
			}
			i = end
			continue
		case '{', '[':
			if len(s.stack) > 0 && state != wantValueOrClose && state != wantValue {
				return i, spaced, syntaxError(i, "unexpected bracket")
			}
			if len(s.stack) >= maxDepth {
				return i, spaced, syntaxError(i, "nested too deep")
			}
			s.stack = append(s.stack, frame{node: next, at: i, open: c})
			if c == '{' {
				state = wantKeyOrClose
				next = fieldpath.Node{}
			} else {
				state = wantValueOrClose
				next = next.Elements()
			}
		case '}', ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if len(s.stack) == 0 || s.stack[len(s.stack)-1].open != open {
				return i, spaced, syntaxError(i, "mismatched bracket")
			}
			if state != wantCommaOrClose && state != wantKeyOrClose && state != wantValueOrClose {
				return i, spaced, syntaxError(i, "unexpected close")
			}
			top := s.stack[len(s.stack)-1]
			s.stack = s.stack[:len(s.stack)-1]
			if top.node.Ends() {
				f.Add(top.node, b[top.at:i+1])
			}
			state = wantCommaOrClose
			next = fieldpath.Node{}
			if len(s.stack) == 0 {
				return i + 1, spaced, nil
			}
		case ',':
			if state != wantCommaOrClose {
				return i, spaced, syntaxError(i, "unexpected comma")
			}
			if top := &s.stack[len(s.stack)-1]; top.open == '{' {
				state = wantKey
			} else {
				state = wantValue
				next = top.node.Elements()
			}
		case ':':
			if state != wantColon {
				return i, spaced, syntaxError(i, "unexpected colon")
			}
			state = wantValue
		default:
			if state != wantValueOrClose && state != wantValue {
				return i, spaced, syntaxError(i, fmt.Sprintf("unexpected %q", c))
			}
			end, err := scalar(b, i)
			if err != nil {
				return end, spaced, err
			}
			if !next.IsZero() {
				f.Add(next, b[i:end])
				next = fieldpath.Node{}
			}
			i = end
			state = wantCommaOrClose
			continue
		}
		i++
	}
	return i, spaced, errIncomplete
}

// maxDepth bounds the nesting of the values the scanner skips, as
// encoding/json bounds its own (10,000).
const maxDepth = 10000

// appendValue appends the value b[start:end] to out, compacted if spaced.
func appendValue(out, b []byte, start, end int, spaced bool) ([]byte, error) {
	if !spaced {
		return append(out, b[start:end]...), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b[start:end]); err != nil {
		return out, syntaxError(start, err.Error())
	}
	return append(out, buf.Bytes()...), nil
}
