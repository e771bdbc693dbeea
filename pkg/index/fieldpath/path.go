package fieldpath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// ClusterPath is the text of the path that names the object's cluster.
const ClusterPath = "cluster"

// Path is a parsed path: keys of nested objects, with [] where the path
// crosses an array (any element). The zero Path is not valid; Parse returns
// valid ones. A Path is immutable and safe for concurrent use.
type Path struct {
	segs []segment
	// cluster marks the path cluster: the object's cluster.
	cluster bool
	// crosses records that some segment is [].
	crosses bool
	text    string
}

// segment is one step of a path: a key of an object, or [] (each element
// of an array).
type segment struct {
	key string
	// gkey is key as a one-component gjson path (its special characters
	// escaped).
	gkey string
	// run is the gjson path of this key and the keys after it that one
	// gjson lookup may follow, and runLen how many keys that is: a lookup
	// of a.b.c finds c without first finding where the values of a and
	// a.b end. A key of digits only ends a run after its first key: on an
	// array, gjson would read it as an index.
	run    string
	runLen int
	each   bool
}

// SyntaxError reports a malformed path.
type SyntaxError struct {
	// Text is the path as given.
	Text string
	// Offset is where, in bytes from the start of Text, the problem is.
	Offset int
	// Reason says what is wrong.
	Reason string
}

// Error says what is wrong and where.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid path %q: %s at offset %d", e.Text, e.Reason, e.Offset)
}

// Parse parses a whole path:
//
//	path   = "cluster" | key { "." name | quoted | "[]" }
//	key    = name | quoted
//	name   = 1*( letter | digit | "_" | "-" )
//	quoted = "[" string "]"   ; a double-quoted string, Go/JSON escapes
//
// A key with other characters (dots, slashes) is quoted:
// metadata.annotations["example.com/owner"]. Keys are not empty.
func Parse(text string) (Path, error) {
	p, n, err := ParsePrefix(text)
	if err != nil {
		return Path{}, err
	}
	if n < len(text) {
		return Path{}, &SyntaxError{Text: text, Offset: n, Reason: fmt.Sprintf("unexpected %q", text[n])}
	}
	return p, nil
}

// MustParse is Parse for paths known to be valid; it panics otherwise.
func MustParse(text string) Path {
	p, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return p
}

// ParsePrefix parses the path at the start of text, as long as it goes,
// and returns it with the number of bytes it took. What follows (an
// operator, a space) is the caller's. Errors are as Parse's, with offsets
// in text.
func ParsePrefix(text string) (Path, int, error) {
	var p Path
	i := 0
	fail := func(at int, reason string) (Path, int, error) {
		return Path{}, 0, &SyntaxError{Text: text, Offset: at, Reason: reason}
	}
	for {
		start := i
		switch {
		case i < len(text) && text[i] == '[' && i+1 < len(text) && text[i+1] == ']':
			if len(p.segs) == 0 {
				return fail(i, "a path starts with a key, not []")
			}
			p.segs = append(p.segs, segment{each: true})
			p.crosses = true
			i += 2
		case i < len(text) && text[i] == '[':
			key, n, err := quotedKey(text[i+1:])
			if err != "" {
				return fail(i+1+n, err)
			}
			i += 1 + n
			if i >= len(text) || text[i] != ']' {
				return fail(i, `expected "]" after a quoted key`)
			}
			i++
			p.segs = append(p.segs, newKey(key))
		default:
			if len(p.segs) > 0 {
				if i >= len(text) || text[i] != '.' {
					p.finish()
					return p, i, nil
				}
				i++
				start = i
			}
			for i < len(text) && isNameByte(text[i]) {
				i++
			}
			if i == start {
				switch {
				case i >= len(text):
					return fail(i, "expected a key")
				case text[i] == '"':
					return fail(i, `expected a key: quote a key as ["key"]`)
				}
				return fail(i, fmt.Sprintf("expected a key, found %q (quote keys with other characters as [\"key\"])", text[i]))
			}
			p.segs = append(p.segs, newKey(text[start:i]))
		}
		if len(p.segs) > maxSegments {
			return fail(start, fmt.Sprintf("more than %d steps", maxSegments))
		}
	}
}

// maxSegments bounds a path's steps: deeper paths name nothing in a
// Kubernetes object, and evaluation recurses once per step.
const maxSegments = 64

func newKey(k string) segment { return segment{key: k, gkey: gjson.Escape(k)} }

// finish sets what follows from the segments.
func (p *Path) finish() {
	p.cluster = len(p.segs) == 1 && p.segs[0].key == ClusterPath
	p.text = p.format()
	for i := range p.segs {
		if p.segs[i].each {
			continue
		}
		run, n := p.segs[i].gkey, 1
		for j := i + 1; j < len(p.segs) && !p.segs[j].each && !allDigits(p.segs[j].key); j++ {
			run, n = run+"."+p.segs[j].gkey, n+1
		}
		p.segs[i].run, p.segs[i].runLen = run, n
	}
}

func allDigits(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// quotedKey reads a double-quoted string at the start of s and returns it
// unquoted with its length; on failure, a reason and the offset of the
// problem.
func quotedKey(s string) (string, int, string) {
	if s == "" || s[0] != '"' {
		return "", 0, `expected a quoted key ("…") or ] after [`
	}
	end := 1
	for ; end < len(s) && s[end] != '"'; end++ {
		if s[end] == '\\' {
			end++
		}
	}
	if end >= len(s) {
		return "", len(s), "unterminated quoted key"
	}
	key, err := strconv.Unquote(s[:end+1])
	if err != nil {
		return "", 0, "invalid quoted key: " + err.Error()
	}
	if key == "" {
		return "", 0, "empty key"
	}
	return key, end + 1, ""
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return s != ""
}

// String returns the path in canonical form: names as names, other keys
// quoted. Parse(p.String()) is p.
func (p Path) String() string { return p.text }

func (p Path) format() string {
	if p.cluster {
		return ClusterPath
	}
	var b strings.Builder
	for i, s := range p.segs {
		switch {
		case s.each:
			b.WriteString("[]")
		case isName(s.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Quote(s.key))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// IsCluster reports whether p is the path cluster, the object's cluster.
func (p Path) IsCluster() bool { return p.cluster }

// Crosses reports whether p crosses an array ([]): its value is a list.
func (p Path) Crosses() bool { return p.crosses }
