package fieldselector

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

// Operator is what a Requirement asks of the values at its path.
type Operator string

// The operators. == parses as Equals.
const (
	Equals       Operator = "="
	NotEquals    Operator = "!="
	In           Operator = "in"
	NotIn        Operator = "notin"
	Exists       Operator = "exists" // written as the path alone
	DoesNotExist Operator = "!"      // written as !path
	GreaterThan  Operator = ">"
	LessThan     Operator = "<"
)

// Selector is a parsed field selector: requirements that must all hold. The
// zero Selector is empty and selects everything. A Selector is immutable
// and safe for concurrent use.
type Selector struct {
	reqs []Requirement
	text string
}

// Requirement is one requirement of a Selector: a path, an operator and,
// for =, !=, in, notin, > and <, its values.
type Requirement struct {
	path   fieldpath.Path
	op     Operator
	values []operand
	text   string
}

// operand is a value of a requirement, with its number when it is one.
type operand struct {
	text  string
	num   float64
	isNum bool
}

// SyntaxError reports a malformed field selector.
type SyntaxError struct {
	// Text is the selector as given.
	Text string
	// Offset is where, in bytes from the start of Text, the problem is.
	Offset int
	// Reason says what is wrong.
	Reason string
}

// Error says what is wrong and where.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid field selector %q: %s at offset %d", e.Text, e.Reason, e.Offset)
}

// Parse parses a field selector: requirements separated by commas, each one
// of
//
//	path=value  path==value  path!=value  path>number  path<number
//	path in (value,…)  path notin (value,…)  path  !path
//
// with the paths of package fieldpath. Spaces around paths, operators and
// values are ignored. A value runs to the next comma (or, in a list, to the
// next comma or closing parenthesis); a backslash takes the next character
// as it is, so \, \( \) \\ and a leading or trailing "\ " are part of a
// value. Unescaped parentheses are not. An empty or blank text is the empty
// Selector.
func Parse(text string) (Selector, error) {
	p := parser{text: text}
	if p.skipSpace(); p.done() {
		return Selector{}, nil
	}
	var reqs []Requirement
	for {
		r, err := p.requirement()
		if err != nil {
			return Selector{}, err
		}
		reqs = append(reqs, r)
		if p.done() {
			break
		}
		if p.text[p.i] != ',' {
			return Selector{}, p.fail(p.i, fmt.Sprintf("expected a comma or the end, found %q", p.text[p.i]))
		}
		p.i++
	}
	return Of(reqs...), nil
}

// Of returns the selector of reqs, all of which must hold: what Parse
// returns for their texts joined by commas.
func Of(reqs ...Requirement) Selector {
	reqs = slices.Clone(reqs)
	slices.SortFunc(reqs, func(a, b Requirement) int { return strings.Compare(a.text, b.text) })
	reqs = slices.CompactFunc(reqs, func(a, b Requirement) bool { return a.text == b.text })
	texts := make([]string, len(reqs))
	for i, r := range reqs {
		texts[i] = r.text
	}
	return Selector{reqs: reqs, text: strings.Join(texts, ",")}
}

// Compare returns the requirement path op value, for op Equals or
// NotEquals (as Parse reads path=value, path!=value), without parsing.
func Compare(path fieldpath.Path, op Operator, value string) Requirement {
	r := Requirement{path: path, op: op, values: []operand{newOperand(value)}}
	r.text = r.format()
	return r
}

// CompareIn returns the requirement path in (values…), without parsing:
// what Parse returns for it, the values sorted and without duplicates. It
// needs at least one value.
func CompareIn(path fieldpath.Path, values ...string) Requirement {
	r := Requirement{path: path, op: In, values: make([]operand, 0, len(values))}
	for _, v := range values {
		r.values = append(r.values, newOperand(v))
	}
	slices.SortFunc(r.values, func(a, b operand) int { return strings.Compare(a.text, b.text) })
	r.values = slices.CompactFunc(r.values, func(a, b operand) bool { return a.text == b.text })
	r.text = r.format()
	return r
}

// parser reads a selector's text.
type parser struct {
	text string
	i    int
}

func (p *parser) done() bool { return p.i >= len(p.text) }

func (p *parser) fail(at int, reason string) error {
	return &SyntaxError{Text: p.text, Offset: at, Reason: reason}
}

func (p *parser) skipSpace() {
	for p.i < len(p.text) && isSpace(p.text[p.i]) {
		p.i++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// requirement reads one requirement and the spaces after it.
func (p *parser) requirement() (Requirement, error) {
	p.skipSpace()
	if p.done() || p.text[p.i] == ',' {
		return Requirement{}, p.fail(p.i, "empty requirement")
	}
	not := p.text[p.i] == '!'
	if not {
		p.i++
		p.skipSpace()
	}
	path, err := p.path()
	if err != nil {
		return Requirement{}, err
	}
	p.skipSpace()
	r := Requirement{path: path, op: Exists}
	switch {
	case not:
		r.op = DoesNotExist
	case p.done() || p.text[p.i] == ',':
	case strings.HasPrefix(p.text[p.i:], "=="):
		r.op, p.i = Equals, p.i+2
	case strings.HasPrefix(p.text[p.i:], "!="):
		r.op, p.i = NotEquals, p.i+2
	case p.text[p.i] == '=':
		r.op, p.i = Equals, p.i+1
	case p.text[p.i] == '>':
		r.op, p.i = GreaterThan, p.i+1
	case p.text[p.i] == '<':
		r.op, p.i = LessThan, p.i+1
	case p.word("notin"):
		r.op = NotIn
	case p.word("in"):
		r.op = In
	default:
		return Requirement{}, p.fail(p.i, fmt.Sprintf("expected an operator (=, ==, !=, in, notin, >, <), a comma or the end after the path %s, found %q",
			path, p.text[p.i]))
	}
	switch r.op {
	case Equals, NotEquals:
		v, err := p.value(false)
		if err != nil {
			return Requirement{}, err
		}
		r.values = []operand{v}
	case GreaterThan, LessThan:
		at := p.i
		v, err := p.value(false)
		if err != nil {
			return Requirement{}, err
		}
		if !v.isNum {
			return Requirement{}, p.fail(at, fmt.Sprintf("%s needs a number, got %q", r.op, v.text))
		}
		v.text = strconv.FormatFloat(v.num, 'g', -1, 64)
		r.values = []operand{v}
	case In, NotIn:
		if r.values, err = p.list(r.op); err != nil {
			return Requirement{}, err
		}
	}
	p.skipSpace()
	r.text = r.format()
	return r, nil
}

// path reads a path at the current offset.
func (p *parser) path() (fieldpath.Path, error) {
	path, n, err := fieldpath.ParsePrefix(p.text[p.i:])
	if err != nil {
		var se *fieldpath.SyntaxError
		if errors.As(err, &se) {
			return path, p.fail(p.i+se.Offset, "invalid path: "+se.Reason)
		}
		return path, p.fail(p.i, err.Error())
	}
	p.i += n
	return path, nil
}

// word reads w if it stands at the current offset followed by a space or
// an opening parenthesis.
func (p *parser) word(w string) bool {
	rest := p.text[p.i:]
	if !strings.HasPrefix(rest, w) || len(rest) == len(w) || (!isSpace(rest[len(w)]) && rest[len(w)] != '(') {
		return false
	}
	p.i += len(w)
	return true
}

// list reads "(value,…)" with at least one value.
func (p *parser) list(op Operator) ([]operand, error) {
	p.skipSpace()
	if p.done() || p.text[p.i] != '(' {
		return nil, p.fail(p.i, fmt.Sprintf("expected ( after %s", op))
	}
	p.i++
	var out []operand
	for {
		v, err := p.value(true)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.done() {
			return nil, p.fail(p.i, "expected ) to close the list")
		}
		c := p.text[p.i]
		p.i++
		if c == ')' {
			break
		}
	}
	slices.SortFunc(out, func(a, b operand) int { return strings.Compare(a.text, b.text) })
	return slices.CompactFunc(out, func(a, b operand) bool { return a.text == b.text }), nil
}

// value reads a value up to the next unescaped comma (or closing
// parenthesis in a list), without the spaces around it.
func (p *parser) value(inList bool) (operand, error) {
	p.skipSpace()
	var b []byte
	keep := 0 // len(b) without trailing unescaped spaces
	for !p.done() {
		c := p.text[p.i]
		switch {
		case c == '\\':
			if p.i+1 >= len(p.text) {
				return operand{}, p.fail(p.i, "a backslash ends the selector")
			}
			b = append(b, p.text[p.i+1])
			keep = len(b)
			p.i += 2
			continue
		case c == ',' || (inList && c == ')'):
			return newOperand(string(b[:keep])), nil
		case c == '(' || c == ')':
			return operand{}, p.fail(p.i, fmt.Sprintf(`unexpected %q in a value (escape it as \%c)`, c, c))
		}
		b = append(b, c)
		if !isSpace(c) {
			keep = len(b)
		}
		p.i++
	}
	return newOperand(string(b[:keep])), nil
}

func newOperand(s string) operand {
	n, ok := ParseNumber(s)
	return operand{text: s, num: n, isNum: ok}
}

// ParseNumber parses a decimal number, as JSON writes them (with an
// optional leading +); not Inf, NaN, hexadecimal or underscores. A value
// of a requirement that parses equals the numbers it is equal to.
func ParseNumber(s string) (float64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	return n, err == nil
}

// format prints r in canonical form.
func (r *Requirement) format() string {
	var b strings.Builder
	switch r.op {
	case Exists:
		return r.path.String()
	case DoesNotExist:
		return "!" + r.path.String()
	case In, NotIn:
		b.WriteString(r.path.String())
		b.WriteString(" " + string(r.op) + " (")
		for i, v := range r.values {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(&b, v.text)
		}
		b.WriteByte(')')
		return b.String()
	}
	b.WriteString(r.path.String())
	b.WriteString(string(r.op))
	writeValue(&b, r.values[0].text)
	return b.String()
}

// writeValue writes v escaped so that it reads back as v: a leading = too,
// which would otherwise turn = into ==.
func writeValue(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' || c == ',' || c == '(' || c == ')' || (i == 0 && c == '=') || (isSpace(c) && (i == 0 || i == len(v)-1)) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
}

// Empty reports whether s has no requirement: it selects everything.
func (s Selector) Empty() bool { return len(s.reqs) == 0 }

// String returns s in canonical form: its requirements sorted, without
// duplicates; Parse(s.String()) is s.
func (s Selector) String() string { return s.text }

// Equal reports whether s and o select the same: their canonical forms are
// equal. go-cmp uses it, so that filters holding selectors compare.
func (s Selector) Equal(o Selector) bool { return s.text == o.text }

// Requirements returns the requirements of s, sorted.
func (s Selector) Requirements() []Requirement { return slices.Clone(s.reqs) }

// Matches reports whether every requirement holds for the object of
// cluster whose stored JSON is raw.
func (s Selector) Matches(cluster string, raw []byte) bool {
	return s.MatchesIn(fieldpath.Doc{Cluster: cluster, Raw: raw})
}

// MatchesIn is Matches for the object d.
func (s Selector) MatchesIn(d fieldpath.Doc) bool {
	for i := range s.reqs {
		if !s.reqs[i].MatchesIn(d) {
			return false
		}
	}
	return true
}

// Path returns the requirement's path.
func (r Requirement) Path() fieldpath.Path { return r.path }

// Operator returns the requirement's operator.
func (r Requirement) Operator() Operator { return r.op }

// Values returns the requirement's values, sorted: one for =, != , > and
// <, at least one for in and notin, none for the others.
func (r Requirement) Values() []string {
	out := make([]string, len(r.values))
	for i, v := range r.values {
		out[i] = v.text
	}
	return out
}

// String returns r in canonical form.
func (r Requirement) String() string { return r.text }

// Matches reports whether r holds for the object of cluster whose stored
// JSON is raw. Across an array, some element must satisfy r; for != and
// notin, no element may equal one of the values.
func (r *Requirement) Matches(cluster string, raw []byte) bool {
	return r.MatchesIn(fieldpath.Doc{Cluster: cluster, Raw: raw})
}

// MatchesIn is Matches for the object d.
func (r *Requirement) MatchesIn(d fieldpath.Doc) bool {
	switch r.op {
	case Exists:
		return r.path.HasIn(d)
	case DoesNotExist:
		return !r.path.HasIn(d)
	case NotEquals, NotIn:
		return r.path.EachIn(d, func(v fieldpath.Value) bool { return !r.equalsAny(v) })
	}
	// Some value satisfies r: Each stops there.
	return !r.path.EachIn(d, func(v fieldpath.Value) bool { return !r.holds(v) })
}

// holds reports whether the value v satisfies =, in, > or <.
func (r *Requirement) holds(v fieldpath.Value) bool {
	switch r.op {
	case GreaterThan, LessThan:
		n, ok := numberOf(v)
		if !ok {
			return false
		}
		if r.op == GreaterThan {
			return n > r.values[0].num
		}
		return n < r.values[0].num
	}
	return r.equalsAny(v)
}

// equalsAny reports whether v equals one of r's values: a string its text,
// a number a value that is the same number, a boolean "true" or "false".
// Objects and arrays equal nothing.
func (r *Requirement) equalsAny(v fieldpath.Value) bool {
	for _, o := range r.values {
		switch v.Kind {
		case fieldpath.String:
			if v.Str == o.text {
				return true
			}
		case fieldpath.Number:
			if o.isNum && v.Num == o.num {
				return true
			}
		case fieldpath.Bool:
			if o.text == strconv.FormatBool(v.Bool) {
				return true
			}
		}
	}
	return false
}

// numberOf returns v as a number: a number, or a string that holds one.
func numberOf(v fieldpath.Value) (float64, bool) {
	switch v.Kind {
	case fieldpath.Number:
		return v.Num, true
	case fieldpath.String:
		return ParseNumber(v.Str)
	}
	return 0, false
}
