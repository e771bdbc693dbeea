package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unique"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

// LastApplied is the annotation kubectl apply writes: a second copy of the
// object, which the Decoder leaves out.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Decoder turns the JSON of objects of one type of one cluster into
// object.Objects. It reuses buffers between calls: one goroutine at a time.
type Decoder struct {
	cluster  string
	t        *object.Type
	dropData bool
	// kind and apiVersion are the members an object without them gets
	// (a list's items), encoded.
	kind, apiVersion []byte

	sc scanner
	// buf holds the object's stored bytes being built: its members behind
	// room for kind and apiVersion (see object).
	buf    []byte
	labels object.Labels
	owners []object.OwnerRef
	// changed is the newest managedFields time of the object being
	// decoded.
	changed time.Time
	// walk reads the type's projected paths, then search.SearchedPaths.
	walk fieldpath.Set
	// text holds an object's Text as it is read, pointing into buf;
	// textBytes and textStrs are where the decoded objects' Text is
	// kept (keepText), in chunks of textChunk bytes at least.
	text      []string
	textBytes []byte
	textStrs  []string
	textChunk int
	// identParts hold the object's name, UID and resourceVersion, which
	// become one string (ident): one allocation for the three.
	identParts [3][]byte
	ident      []byte
	// interned maps the strings the index interns (namespaces, label keys
	// and values, owners' API versions and kinds) to their interned form,
	// so that a repeated one costs no allocation.
	interned map[string]string
}

// Decoded is an object as a Decoder decodes it, with what the decoder
// read of it besides: a list's items and a watch's objects are Decoded.
// They live until they are applied.
type Decoded struct {
	*object.Object
	// Text is the tokens the object's body adds to its searched text
	// (search.AppendBodyTokens, index.Prepared), read from its JSON before it
	// was compressed: inserting it then reads the body no more.
	Text []string
	// Changed is the newest time in the object's managedFields: when a
	// manager last changed it, by the server's clock, to the second. Zero
	// when it has none. The informers estimate ingest lag from it.
	Changed time.Time
}

// timeKey begins the time of a managedFields entry; keys of the fields
// inside an entry are written "f:<name>", so they never match it.
var timeKey = []byte(`"time":"`)

// newestTime returns the latest RFC 3339 time among the "time" members of
// the managedFields b, without decoding them.
func newestTime(b []byte) time.Time {
	var newest time.Time
	for {
		i := bytes.Index(b, timeKey)
		if i < 0 {
			return newest
		}
		b = b[i+len(timeKey):]
		end := bytes.IndexByte(b, '"')
		if end < 0 {
			return newest
		}
		if t, err := parseTime(b[:end]); err == nil && t.After(newest) {
			newest = t
		}
		b = b[end:]
	}
}

// maxInterned bounds Decoder.interned: labels unique to each object
// (a Pod's name in a label) must not grow it with the response.
const maxInterned = 4096

// intern returns the interned string holding b.
func (d *Decoder) intern(b []byte) string {
	if s, ok := d.interned[string(b)]; ok {
		return s
	}
	s := unique.Make(string(b)).Value()
	if d.interned == nil {
		d.interned = map[string]string{}
	}
	if len(d.interned) < maxInterned {
		d.interned[s] = s
	}
	return s
}

// text returns the text of the string b[start:end] (quotes included):
// a view of b unless it holds escapes.
func text(b []byte, start, end int, escaped bool) ([]byte, error) {
	if !escaped {
		return b[start+1 : end-1], nil
	}
	s, err := stringValue(b, start, end, true)
	return []byte(s), err
}

// NewDecoder returns a Decoder of the objects of type t in cluster. With
// dropData, the top-level members data and stringData are left out: a
// Secret whose credentials must not be cached.
func NewDecoder(cluster string, t *object.Type, dropData bool) *Decoder {
	d := &Decoder{cluster: unique.Make(cluster).Value(), t: t, dropData: dropData, textChunk: textChunk,
		walk: fieldpath.NewSet(append(slices.Clone(t.Projected.Paths()), search.SearchedPaths()...))}
	d.kind, _ = json.Marshal(t.Kind)
	d.apiVersion, _ = json.Marshal(t.APIVersion())
	return d
}

// Object decodes one object: b holds exactly one JSON object, whitespace
// around it allowed.
func (d *Decoder) Object(b []byte) (*Decoded, error) {
	o, end, err := d.object(b, 0)
	if err != nil {
		return nil, err
	}
	if end = skipSpace(b, end); end != len(b) {
		return nil, syntaxError(end, "data after the object")
	}
	return o, nil
}

// name returns the text of the key b[ks:ke] (quotes included). It
// allocates only for a key with escapes.
func name(b []byte, ks, ke int, escaped bool) []byte {
	if !escaped {
		return b[ks+1 : ke-1]
	}
	s, err := stringValue(b, ks, ke, true)
	if err != nil {
		return nil
	}
	return []byte(s)
}

// nextKey reads, inside an object, either its closing brace (done, next
// after it) or the next member's key and colon (next at the value). first
// says that no member was read yet.
func nextKey(b []byte, i int, first bool) (ks, ke int, escaped bool, next int, done bool, err error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, 0, false, i, false, errIncomplete
	}
	if b[i] == '}' {
		return 0, 0, false, i + 1, true, nil
	}
	if !first {
		if b[i] != ',' {
			return 0, 0, false, i, false, syntaxError(i, "want ',' or '}'")
		}
		if i = skipSpace(b, i+1); i >= len(b) {
			return 0, 0, false, i, false, errIncomplete
		}
	}
	if b[i] != '"' {
		return 0, 0, false, i, false, syntaxError(i, "want a key")
	}
	ks = i
	if ke, escaped, err = scanString(b, i); err != nil {
		return 0, 0, false, ke, false, err
	}
	next, err = expect(b, ke, ':')
	return ks, ke, escaped, next, false, err
}

// member appends the member with key b[ks:ke] and value b[vs:ve] to out,
// after a comma unless it is the first.
func member(out, b []byte, ks, ke, vs, ve int, spaced, first bool) ([]byte, error) {
	if !first {
		out = append(out, ',')
	}
	out = append(out, b[ks:ke]...)
	out = append(out, ':')
	return appendValue(out, b, vs, ve, spaced)
}

// moved returns offset at, 0 for none, shifted by shift.
func moved(at, shift int) int {
	if at == 0 {
		return 0
	}
	return at + shift
}

// object decodes the object at or after b[i] and returns the offset after it.
func (d *Decoder) object(b []byte, i int) (*Decoded, int, error) {
	i, err := expect(b, i, '{')
	if err != nil {
		return nil, i, err
	}
	// out holds the members from room on; what goes before them, the
	// opening brace and, for a list's items, which the server sends
	// without kind and apiVersion, those two, is written at the end,
	// without moving the members: the stored bytes are then as a GET
	// returns them, for no copy.
	room := 1 + len(`"kind":,`) + len(d.kind) + len(`"apiVersion":,`) + len(d.apiVersion)
	out := slices.Grow(d.buf[:0], room+4096)[:room]
	m := object.Meta{Interned: true} // by d.intern
	d.labels, d.owners, d.changed = d.labels[:0], d.owners[:0], time.Time{}
	for f := range d.identParts {
		d.identParts[f] = d.identParts[f][:0]
	}
	hasKind, hasAPIVersion := false, false
	written := 0
	// Where the values of spec, status and metadata begin in out
	// (object.BuildAt; the walk of metadata).
	spec, status, meta := 0, 0, 0
	// found gets the values of the type's projected paths and of those
	// its search text is made of (d.walk) as the members are scanned,
	// but for metadata's, which are read from what is kept of it, and
	// for members that are not compact, whose stored text is not the
	// server's: then the walk reads the stored bytes.
	root := d.walk.Root()
	found := d.walk.Collect(d.cluster)
	defer func() { found.Release() }()
	var rootSeen frame
	rootSeen.node = root
	metaNode, reread := fieldpath.Node{}, false
	for first := true; ; first = false {
		ks, ke, esc, vi, done, err := nextKey(b, i, first)
		if err != nil {
			return nil, vi, err
		}
		if done {
			i = vi
			break
		}
		key := name(b, ks, ke, esc)
		node := rootSeen.member(key)
		// mark is where this member's value is recorded, if it is spec
		// or status (the first of each).
		var mark *int
		switch string(key) {
		case "spec":
			mark = &spec
		case "status":
			mark = &status
		case "metadata":
			if vi = skipSpace(b, vi); vi < len(b) && b[vi] == '{' {
				at := valueAt(out, ks, ke, written)
				if out, i, err = d.metadata(out, b, ks, ke, vi, written == 0, &m); err != nil {
					return nil, i, err
				}
				if !node.IsZero() {
					metaNode, meta = node, at
				}
				written++
				continue
			}
		case "data", "stringData":
			if d.dropData {
				_, ve, _, err := d.sc.skipValue(b, vi)
				if err != nil {
					return nil, ve, err
				}
				i = ve
				continue
			}
		case "kind":
			hasKind = true
		case "apiVersion":
			hasAPIVersion = true
		}
		vs, ve, spaced, err := d.sc.walkValue(b, vi, node, found)
		if err != nil {
			return nil, ve, err
		}
		reread = reread || spaced && !node.IsZero()
		if mark != nil && *mark == 0 {
			*mark = valueAt(out, ks, ke, written)
		}
		if out, err = member(out, b, ks, ke, vs, ve, spaced, written == 0); err != nil {
			return nil, ve, err
		}
		written++
		i = ve
	}
	out = append(out, '}')
	d.buf = out
	// start is where the stored bytes begin in out: the opening brace,
	// then kind and apiVersion where the object lacks them.
	start, end := room, len(out)
	put := func(member string, value []byte) {
		start -= len(member) + len(value) + 1
		n := copy(out[start:], member)
		n += copy(out[start+n:], value)
		out[start+n] = ','
	}
	if !hasAPIVersion {
		put(`"apiVersion":`, d.apiVersion)
		found.Add(rootSeen.member([]byte("apiVersion")), d.apiVersion)
	}
	if !hasKind {
		put(`"kind":`, d.kind)
		found.Add(rootSeen.member([]byte("kind")), d.kind)
	}
	if written == 0 && start < room {
		// No member follows the last comma: it closes the object.
		out[room-1], end = '}', room
	}
	start--
	out[start] = '{'
	raw := out[start:end]
	d.ident = append(append(append(d.ident[:0], d.identParts[0]...), d.identParts[1]...), d.identParts[2]...)
	if len(d.ident) > 0 {
		id := string(d.ident)
		name, uid := len(d.identParts[0]), len(d.identParts[0])+len(d.identParts[1])
		m.Name, m.UID, m.ResourceVersion = id[:name], types.UID(id[name:uid]), id[uid:]
	}
	if len(d.labels) > 0 {
		m.Labels = slices.Clone(d.labels)
	}
	if len(d.owners) > 0 {
		m.Owners = slices.Clone(d.owners)
	}
	// spec, status and metadata are offsets in out.
	spec, status, meta = moved(spec, -start), moved(status, -start), moved(meta, -start)
	if reread {
		found.Release()
		found = d.walk.Read(fieldpath.Doc{Cluster: d.cluster, Raw: raw, Spec: spec, Status: status})
	} else {
		found.WalkAt(metaNode, raw, meta)
		found.Done()
	}
	o := object.BuildAt(d.cluster, d.t, m, raw, spec, status, found)
	d.text = search.AppendFoundTokens(d.text[:0], o, found, d.t.Projected.Len())
	return &Decoded{Object: o, Text: d.keepText(d.text), Changed: d.changed}, i, nil
}

// valueAt returns where the value of the member whose key is b[ks:ke]
// begins in out, the member to be appended to it, after written others.
func valueAt(out []byte, ks, ke, written int) int {
	at := len(out) + ke - ks + 1 // after the key and its colon
	if written > 0 {
		at++ // and the comma
	}
	return at
}

// textChunk is the size of the chunks keepText carves a list's Text from.
const textChunk = 4096

// keepText returns a copy of text, which points into the decoder's
// buffers, carved from chunks that the objects decoded after it share (a
// list's): an object's Text costs no allocation of its own. A chunk's
// bytes are written once, before the strings that view them exist.
func (d *Decoder) keepText(text []string) []string {
	if len(text) == 0 {
		return nil
	}
	size := 0
	for _, t := range text {
		size += len(t)
	}
	if cap(d.textBytes)-len(d.textBytes) < size {
		d.textBytes = make([]byte, 0, max(d.textChunk, size))
	}
	if cap(d.textStrs)-len(d.textStrs) < len(text) {
		d.textStrs = make([]string, 0, max(d.textChunk/16, len(text)))
	}
	start := len(d.textStrs)
	for _, t := range text {
		at := len(d.textBytes)
		d.textBytes = append(d.textBytes, t...)
		d.textStrs = append(d.textStrs, unsafe.String(unsafe.SliceData(d.textBytes[at:]), len(t)))
	}
	return d.textStrs[start:len(d.textStrs):len(d.textStrs)]
}

// metadata decodes the object metadata whose key is b[ks:ke] and whose
// value starts at b[i] == '{': it appends the member to out, less
// managedFields and the last-applied annotation, and fills m.
func (d *Decoder) metadata(out, b []byte, ks, ke, i int, first bool, m *object.Meta) ([]byte, int, error) {
	if !first {
		out = append(out, ',')
	}
	out = append(out, b[ks:ke]...)
	out = append(out, ':', '{')
	i++ // the brace
	written := 0
	for first := true; ; first = false {
		ks, ke, esc, vi, done, err := nextKey(b, i, first)
		if err != nil {
			return out, vi, err
		}
		if done {
			return append(out, '}'), vi, nil
		}
		key := name(b, ks, ke, esc)
		if string(key) == "managedFields" {
			vs, ve, _, err := d.sc.skipValue(b, vi)
			if err != nil {
				return out, ve, err
			}
			d.changed = newestTime(b[vs:ve])
			i = ve
			continue
		}
		vs, ve, spaced, err := d.field(b, vi, key, m)
		if err != nil {
			return out, ve, err
		}
		if string(key) == "annotations" && b[vs] == '{' {
			mark := len(out)
			kept := 0
			if out, kept, err = d.annotations(out, b, ks, ke, vs, written == 0); err != nil {
				return out, ve, err
			}
			if kept == 0 {
				out = out[:mark] // only the last-applied annotation: no annotations
			} else {
				written++
			}
			i = ve
			continue
		}
		if out, err = member(out, b, ks, ke, vs, ve, spaced, written == 0); err != nil {
			return out, ve, err
		}
		written++
		i = ve
	}
}

// field reads the value at or after b[i] of the metadata member key,
// filling m from the members the indexes need.
func (d *Decoder) field(b []byte, i int, key []byte, m *object.Meta) (vs, ve int, spaced bool, err error) {
	vs = skipSpace(b, i)
	if vs >= len(b) {
		return vs, vs, false, errIncomplete
	}
	switch string(key) {
	case "name", "namespace", "uid", "resourceVersion", "creationTimestamp":
		if b[vs] != '"' {
			break // null, or not ours to judge: kept as it is
		}
		ve, esc, err := scanString(b, vs)
		if err != nil {
			return vs, ve, false, err
		}
		t, err := text(b, vs, ve, esc)
		if err != nil {
			return vs, ve, false, err
		}
		switch string(key) {
		case "namespace":
			m.Namespace = d.intern(t)
		case "creationTimestamp":
			if m.Created, err = parseTime(t); err != nil {
				return vs, ve, false, fmt.Errorf("creationTimestamp: %w", err)
			}
		default:
			d.setIdent(string(key), t)
		}
		return vs, ve, false, nil
	case "labels":
		if b[vs] == '{' {
			return d.labelsOf(b, vs)
		}
	case "ownerReferences":
		if b[vs] == '[' {
			return d.ownersOf(b, vs)
		}
	}
	return d.sc.skipValue(b, vs)
}

// setIdent records the name, uid or resourceVersion (key) of the object.
func (d *Decoder) setIdent(key string, t []byte) {
	f := 0
	switch key {
	case "uid":
		f = 1
	case "resourceVersion":
		f = 2
	}
	d.identParts[f] = append(d.identParts[f][:0], t...)
}

// parseTime reads a time as metav1.Time writes it (creationTimestamp,
// managedFields' times): RFC 3339 in seconds; the common UTC form without
// an allocation.
func parseTime(t []byte) (time.Time, error) {
	if len(t) == 20 && t[4] == '-' && t[7] == '-' && t[10] == 'T' && t[13] == ':' && t[16] == ':' && t[19] == 'Z' {
		num := func(a, b int) (int, bool) {
			n := 0
			for _, c := range t[a:b] {
				if c < '0' || c > '9' {
					return 0, false
				}
				n = n*10 + int(c-'0')
			}
			return n, true
		}
		y, ok1 := num(0, 4)
		mo, ok2 := num(5, 7)
		dd, ok3 := num(8, 10)
		h, ok4 := num(11, 13)
		mi, ok5 := num(14, 16)
		se, ok6 := num(17, 19)
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && mo >= 1 && mo <= 12 && dd >= 1 && dd <= 31 && h < 24 && mi < 60 && se < 60 {
			tm := time.Date(y, time.Month(mo), dd, h, mi, se, 0, time.UTC)
			if tm.Day() == dd { // not February 30th
				return tm, nil
			}
		}
	}
	tm, err := time.Parse(time.RFC3339, string(t))
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: %w", t, err)
	}
	return tm, nil
}

// annotations appends the annotations member whose value starts at b[i]
// less the last-applied annotation, and returns how many it kept.
func (d *Decoder) annotations(out, b []byte, ks, ke, i int, first bool) ([]byte, int, error) {
	if !first {
		out = append(out, ',')
	}
	out = append(out, b[ks:ke]...)
	out = append(out, ':', '{')
	i++
	kept := 0
	for first := true; ; first = false {
		ks, ke, esc, vi, done, err := nextKey(b, i, first)
		if err != nil {
			return out, kept, err
		}
		if done {
			return append(out, '}'), kept, nil
		}
		vs, ve, spaced, err := d.sc.skipValue(b, vi)
		if err != nil {
			return out, kept, err
		}
		i = ve
		if string(name(b, ks, ke, esc)) == LastApplied {
			continue
		}
		if out, err = member(out, b, ks, ke, vs, ve, spaced, kept == 0); err != nil {
			return out, kept, err
		}
		kept++
	}
}

// labelsOf reads the labels object at b[i] into d.labels.
func (d *Decoder) labelsOf(b []byte, i int) (vs, ve int, spaced bool, err error) {
	vs = i
	i++
	for first := true; ; first = false {
		ks, ke, esc, vi, done, err := nextKey(b, i, first)
		if err != nil {
			return vs, vi, false, err
		}
		if done {
			return vs, vi, containsSpace(b[vs:vi]), nil
		}
		kt, err := text(b, ks, ke, esc)
		if err != nil {
			return vs, ke, false, err
		}
		k := d.intern(kt)
		if vi = skipSpace(b, vi); vi >= len(b) {
			return vs, vi, false, errIncomplete
		}
		if b[vi] != '"' {
			return vs, vi, false, syntaxError(vi, "a label's value is not a string")
		}
		end, esc, err := scanString(b, vi)
		if err != nil {
			return vs, end, false, err
		}
		vt, err := text(b, vi, end, esc)
		if err != nil {
			return vs, end, false, err
		}
		d.labels = append(d.labels, object.Label{Key: k, Value: d.intern(vt)})
		i = end
	}
}

// ownersOf reads the ownerReferences array at b[i] into d.owners.
func (d *Decoder) ownersOf(b []byte, i int) (vs, ve int, spaced bool, err error) {
	vs = i
	i++
	for first := true; ; first = false {
		if i = skipSpace(b, i); i >= len(b) {
			return vs, i, false, errIncomplete
		}
		if b[i] == ']' {
			return vs, i + 1, containsSpace(b[vs : i+1]), nil
		}
		if !first {
			if b[i] != ',' {
				return vs, i, false, syntaxError(i, "want ',' or ']'")
			}
			i++
		}
		if i, err = expect(b, i, '{'); err != nil {
			return vs, i, false, err
		}
		var ref object.OwnerRef
		for first := true; ; first = false {
			ks, ke, esc, vi, done, err := nextKey(b, i, first)
			if err != nil {
				return vs, vi, false, err
			}
			if done {
				i = vi
				break
			}
			key := name(b, ks, ke, esc)
			s, e, _, err := d.sc.skipValue(b, vi)
			if err != nil {
				return vs, e, false, err
			}
			i = e
			var t []byte
			switch string(key) {
			case "apiVersion", "kind", "name", "uid":
				if b[s] != '"' {
					continue
				}
				_, esc, _ := scanString(b, s)
				if t, err = text(b, s, e, esc); err != nil {
					return vs, e, false, err
				}
			case "controller":
				ref.Controller = string(b[s:e]) == "true"
				continue
			default:
				continue
			}
			switch string(key) {
			case "apiVersion":
				ref.APIVersion = d.intern(t)
			case "kind":
				ref.Kind = d.intern(t)
			case "name":
				ref.Name = string(t)
			case "uid":
				ref.UID = types.UID(t)
			}
		}
		d.owners = append(d.owners, ref)
	}
}

func containsSpace(b []byte) bool {
	// Eight bytes at a time while none is at or below ' ' (whitespace
	// is); a word that has one is read a byte at a time.
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-ones*0x21)&^x&highs != 0 {
			break
		}
	}
	for _, c := range b[i:] {
		if isSpace(c) {
			return true
		}
	}
	return false
}
