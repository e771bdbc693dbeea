package cursor

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math"
	"slices"

	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/planner"
)

// Cursors are opaque to clients. Each is the unpadded base64url encoding of
//
//	tag (1 byte) | payload | CRC-32C of tag and payload (4 bytes, big endian)
//
// where the tag says the kind and version of the cursor:
//
//	'P' page cursor:     five uvarint-length-prefixed strings, the
//	                     object.Position's Cluster, Namespace, Name, Kind and
//	                     Resource; paging continues strictly after it.
//	'R' revision cursor: the uvarint-length-prefixed index epoch, then the
//	                     revision as a uvarint; then, unless the cursor
//	                     ends there, the clocks: the number of distinct
//	                     resources and each as a string, the number of
//	                     clocks, and for each, in Stream order, the length
//	                     of the cluster name it shares with the previous
//	                     one and the rest as a string, the resource's
//	                     place, and the resourceVersion, as uvarints.
//	'S' sorted page cursor: the query fingerprint (8 bytes, big endian),
//	                     the number of sort values as a uvarint, each value
//	                     as its kind (1 byte) then, for a number or a time,
//	                     its float64 bits (8 bytes, big endian), for a
//	                     string its uvarint-length-prefixed bytes; then the
//	                     Position as in a page cursor.
//
// The checksum tells garbage and truncated cursors from real ones; the tag
// tells the kinds apart.

const (
	tagPage     byte = 'P'
	tagRevision byte = 'R'
	tagSorted   byte = 'S'
	// maxSortValues bounds the values a sorted cursor may hold.
	maxSortValues = 64
	// maxLen bounds the encoded length of a cursor a client may send: a
	// revision cursor of 1,000 clusters' clocks is about 12 KB.
	maxLen = 256 << 10
)

// The errors decoding returns, wrapped with details; check them with
// errors.Is.
var (
	// ErrMalformed means the string is not a cursor that this package made.
	ErrMalformed = errors.New("malformed cursor")
	// ErrKind means the string is a cursor of the other kind: a page
	// cursor where a revision is expected, or the reverse.
	ErrKind = errors.New("cursor of the wrong kind")
	// ErrExpired means a revision cursor comes from another index epoch
	// (another fleetcache process, or one that restarted): its revision
	// means nothing to the current index.
	ErrExpired = errors.New("cursor from another index epoch")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seal appends the checksum to b and encodes it.
func seal(b []byte) string {
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return base64.RawURLEncoding.EncodeToString(b)
}

// open decodes s, checks its checksum and tag, and returns the payload.
func open(s string, want byte) ([]byte, error) {
	if len(s) > maxLen {
		return nil, fmt.Errorf("%w: longer than %d characters", ErrMalformed, maxLen)
	}
	// Strict: the unused low bits of the last character must be zero, or
	// each cursor would have aliases that decode to the same bytes.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrMalformed)
	}
	if len(b) < 5 {
		return nil, fmt.Errorf("%w: too short", ErrMalformed)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrMalformed)
	}
	switch tag := body[0]; {
	case tag == want:
		return body[1:], nil
	case tag == tagPage || tag == tagRevision || tag == tagSorted:
		return nil, fmt.Errorf("%w: a %s cursor, not a %s cursor", ErrKind, kindName(tag), kindName(want))
	default:
		return nil, fmt.Errorf("%w: unknown cursor version", ErrMalformed)
	}
}

func kindName(tag byte) string {
	switch tag {
	case tagPage:
		return "page"
	case tagSorted:
		return "sorted page"
	}
	return "revision"
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readUvarint reads a uvarint from b and returns its length, or 0 if b
// does not start with one. Only the shortest encoding of a number is
// accepted ("\x80\x00" is not 0), so that what decodes re-encodes the same.
func readUvarint(b []byte) (uint64, int) {
	n, k := binary.Uvarint(b)
	if k <= 0 || k != uvarintLen(n) {
		return 0, 0
	}
	return n, k
}

// uvarintLen is the length of the shortest uvarint encoding of n.
func uvarintLen(n uint64) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// readString reads a length-prefixed string from b and returns the rest.
func readString(b []byte) (string, []byte, bool) {
	n, k := readUvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	b = b[k:]
	return string(b[:n]), b[n:], true
}

// appendPosition appends the five strings of a Position.
func appendPosition(b []byte, p object.Position) []byte {
	for _, s := range []string{p.Cluster, p.Namespace, p.Name, p.Kind, p.Resource} {
		b = appendString(b, s)
	}
	return b
}

// readPosition reads what appendPosition wrote, which must be all of b.
func readPosition(b []byte) (object.Position, error) {
	var fields [5]string
	for i := range fields {
		var ok bool
		if fields[i], b, ok = readString(b); !ok {
			return object.Position{}, fmt.Errorf("%w: truncated position", ErrMalformed)
		}
	}
	if len(b) != 0 {
		return object.Position{}, fmt.Errorf("%w: trailing bytes", ErrMalformed)
	}
	return object.Position{Cluster: fields[0], Namespace: fields[1], Name: fields[2], Kind: fields[3], Resource: fields[4]}, nil
}

// EncodePage returns the page cursor of a position.
func EncodePage(p object.Position) string {
	b := make([]byte, 0, 1+len(p.Cluster)+len(p.Namespace)+len(p.Name)+len(p.Kind)+len(p.Resource)+5+4)
	b = append(b, tagPage)
	return seal(appendPosition(b, p))
}

// DecodePage returns the position a page cursor holds. Its errors wrap
// ErrMalformed or ErrKind.
func DecodePage(s string) (object.Position, error) {
	b, err := open(s, tagPage)
	if err != nil {
		return object.Position{}, err
	}
	return readPosition(b)
}

// Sorted is what a sorted page cursor holds: where a page of a sorted
// list ends, and which query the list answers.
type Sorted struct {
	// Query is a fingerprint of the filter and sort the page was read
	// with: the next page must be read with the same.
	Query uint64
	planner.SortedPosition
}

// EncodeSorted returns the sorted page cursor of c.
func EncodeSorted(c Sorted) string {
	b := []byte{tagSorted}
	b = binary.BigEndian.AppendUint64(b, c.Query)
	b = binary.AppendUvarint(b, uint64(len(c.Values)))
	for _, v := range c.Values {
		b = append(b, byte(v.Kind))
		switch v.Kind {
		case object.Number, object.Time:
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v.Num))
		case object.String:
			b = appendString(b, v.Str)
		}
	}
	return seal(appendPosition(b, c.Position))
}

// DecodeSorted returns what a sorted page cursor holds. Its errors wrap
// ErrMalformed or ErrKind.
func DecodeSorted(s string) (Sorted, error) {
	b, err := open(s, tagSorted)
	if err != nil {
		return Sorted{}, err
	}
	if len(b) < 8 {
		return Sorted{}, fmt.Errorf("%w: truncated fingerprint", ErrMalformed)
	}
	c := Sorted{Query: binary.BigEndian.Uint64(b)}
	n, k := readUvarint(b[8:])
	if k <= 0 || n > maxSortValues {
		return Sorted{}, fmt.Errorf("%w: bad number of sort values", ErrMalformed)
	}
	b = b[8+k:]
	c.Values = make([]object.SortValue, n)
	for i := range c.Values {
		if len(b) == 0 {
			return Sorted{}, fmt.Errorf("%w: truncated sort value", ErrMalformed)
		}
		v := object.SortValue{Kind: object.SortKind(b[0])}
		b = b[1:]
		switch v.Kind {
		case object.Absent:
		case object.Number, object.Time:
			if len(b) < 8 {
				return Sorted{}, fmt.Errorf("%w: truncated sort value", ErrMalformed)
			}
			v.Num, b = math.Float64frombits(binary.BigEndian.Uint64(b)), b[8:]
			if math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
				return Sorted{}, fmt.Errorf("%w: sort value not a finite number", ErrMalformed)
			}
		case object.String:
			var ok bool
			if v.Str, b, ok = readString(b); !ok {
				return Sorted{}, fmt.Errorf("%w: truncated sort value", ErrMalformed)
			}
		default:
			return Sorted{}, fmt.Errorf("%w: unknown sort value kind", ErrMalformed)
		}
		c.Values[i] = v
	}
	c.Position, err = readPosition(b)
	return c, err
}

// Revision is what a revision cursor holds: a revision of the index of one
// epoch, and the clocks of the member streams up to which the follower
// has every change, which any index resumes from (index.Index.Since).
type Revision struct {
	// Epoch is the index's epoch (index.Index.Epoch).
	Epoch string
	// Revision is a revision of that index.
	Revision uint64
	// Clocks are the streams' clocks at that revision, in Stream order
	// (index.Index.ClocksAt).
	Clocks []index.Clock
}

// EncodeRevision returns the revision cursor of r.
func EncodeRevision(r Revision) string {
	b := make([]byte, 0, 1+len(r.Epoch)+2*binary.MaxVarintLen64+4+16*len(r.Clocks))
	b = append(b, tagRevision)
	b = appendString(b, r.Epoch)
	b = binary.AppendUvarint(b, r.Revision)
	if len(r.Clocks) == 0 {
		return seal(b)
	}
	if !slices.IsSortedFunc(r.Clocks, compareClocks) {
		r.Clocks = slices.SortedFunc(slices.Values(r.Clocks), compareClocks)
	}
	// The resources once, then each clock: its cluster as the length it
	// shares with the previous one's and the rest, its resource's place,
	// its resourceVersion.
	var resources []string
	at := map[string]int{}
	for _, c := range r.Clocks {
		if _, ok := at[c.Stream.Resource]; !ok {
			at[c.Stream.Resource] = len(resources)
			resources = append(resources, c.Stream.Resource)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(resources)))
	for _, res := range resources {
		b = appendString(b, res)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Clocks)))
	prev := ""
	for _, c := range r.Clocks {
		shared := 0
		for shared < len(prev) && shared < len(c.Stream.Cluster) && prev[shared] == c.Stream.Cluster[shared] {
			shared++
		}
		b = binary.AppendUvarint(b, uint64(shared))
		b = appendString(b, c.Stream.Cluster[shared:])
		b = binary.AppendUvarint(b, uint64(at[c.Stream.Resource]))
		b = binary.AppendUvarint(b, c.RV)
		prev = c.Stream.Cluster
	}
	return seal(b)
}

// DecodeRevision returns what a revision cursor holds. Its errors wrap
// ErrMalformed or ErrKind; check the epoch with Revision.Check.
func DecodeRevision(s string) (Revision, error) {
	b, err := open(s, tagRevision)
	if err != nil {
		return Revision{}, err
	}
	epoch, b, ok := readString(b)
	if !ok {
		return Revision{}, fmt.Errorf("%w: truncated epoch", ErrMalformed)
	}
	rev, k := readUvarint(b)
	if k <= 0 {
		return Revision{}, fmt.Errorf("%w: bad revision", ErrMalformed)
	}
	r := Revision{Epoch: epoch, Revision: rev}
	if b = b[k:]; len(b) == 0 {
		return r, nil
	}
	bad := fmt.Errorf("%w: bad clocks", ErrMalformed)
	n, k := readUvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return Revision{}, bad
	}
	b = b[k:]
	resources := make([]string, n)
	for i := range resources {
		if resources[i], b, ok = readString(b); !ok {
			return Revision{}, bad
		}
	}
	if n, k = readUvarint(b); k <= 0 || n > uint64(len(b)) {
		return Revision{}, bad
	}
	b = b[k:]
	r.Clocks = make([]index.Clock, 0, n)
	prev := ""
	for range n {
		shared, k := readUvarint(b)
		if k <= 0 || shared > uint64(len(prev)) {
			return Revision{}, bad
		}
		var rest string
		if rest, b, ok = readString(b[k:]); !ok {
			return Revision{}, bad
		}
		cluster := prev[:shared] + rest
		res, k := readUvarint(b)
		if k <= 0 || res >= uint64(len(resources)) {
			return Revision{}, bad
		}
		b = b[k:]
		rv, k := readUvarint(b)
		if k <= 0 {
			return Revision{}, bad
		}
		b = b[k:]
		c := index.Clock{Stream: index.Stream{Cluster: cluster, Resource: resources[res]}, RV: rv}
		if m := len(r.Clocks); m > 0 && index.CompareStreams(r.Clocks[m-1].Stream, c.Stream) >= 0 {
			return Revision{}, bad // not in order, or twice
		}
		r.Clocks = append(r.Clocks, c)
		prev = cluster
	}
	if len(b) != 0 || EncodeRevision(r) != s {
		return Revision{}, bad // or not as EncodeRevision writes it
	}
	return r, nil
}

func compareClocks(a, b index.Clock) int { return index.CompareStreams(a.Stream, b.Stream) }

// Check returns an error wrapping ErrExpired unless r is a revision of the
// index of the given epoch.
func (r Revision) Check(epoch string) error {
	if r.Epoch != epoch {
		return fmt.Errorf("%w: revision %d of index %q, the current index is %q", ErrExpired, r.Revision, r.Epoch, epoch)
	}
	return nil
}

// Fingerprint returns a fingerprint of a query's filter and sort
// arguments, as graphql-go coerced them, and of what else selects (query:
// a kind's root field, a relation and its object; "" for resources). A
// sorted page cursor holds it (Sorted.Query), so that it is not used with
// another filter or sort, where its sort values would mean nothing.
func Fingerprint(filter, sort any, query string) uint64 {
	// encoding/json writes map keys sorted: equal arguments encode
	// equally. Coerced arguments always encode. A kind's root field or a
	// relation (query) is another query than resources with the same
	// arguments.
	var b []byte
	if query == "" {
		b, _ = json.Marshal([]any{filter, sort})
	} else {
		b, _ = json.Marshal([]any{filter, sort, query})
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
