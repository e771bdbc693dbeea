package search

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// TestBodyTokensBound checks AppendBodyTokens against the bound read the plain
// way (every metadata token counted, then the body's taken until
// MaxObjectTokens in all), around the bound: metadata of a few tokens to
// more than the bound, bodies of a few tokens to more than the bound.
func TestBodyTokensBound(t *testing.T) {
	words := func(prefix string, n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return strings.Join(w, " ")
	}
	plain := func(o *object.Object, d fieldpath.Doc) []string {
		n := 0
		EachMetaToken(o, func(string) bool { n++; return true })
		var out []string
		StoredText(d, func(tok string) bool {
			if n++; n > MaxObjectTokens {
				return false
			}
			out = append(out, tok)
			return true
		})
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, meta := range []int{0, 1, 3, 500, 1000, 1023, 1024, 1025, 2000} {
		for _, body := range []int{0, 1, 24, 1000, 1022, 1023, 1024, 1025, 3000} {
			o := &object.Object{Name: words("n", meta/2), Namespace: "ns",
				Labels: object.Labels{{Key: "k", Value: words("v", meta-meta/2)}}}
			// A long label of tokens many bytes long: the estimate is far
			// above the count.
			o.Labels = append(o.Labels, object.Label{Key: "long", Value: strings.Repeat("abcdefgh ", meta%7)})
			raw := fmt.Appendf(nil, `{"metadata":{"annotations":{"a":%q,"b":%q}},"spec":{"containers":[{"image":%q}]}}`,
				words("a", body/2), words("b", body/4), words("i", body-body/2-body/4))
			d := fieldpath.Members("c", raw)
			got, want := AppendBodyTokens(nil, o, d), plain(o, d)
			if !slices.Equal(got, want) {
				t.Errorf("metadata of about %d tokens, body of %d: %d tokens, want %d", meta, body, len(got), len(want))
			}
		}
	}
}
