package wire_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/compact"
	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
	"github.com/fleetcache/fleetcache/pkg/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestText checks that the search text and the projected values a Decoder
// reads from each object's JSON, in one walk before compressing it, are
// those of the body the object keeps,
// for every item of lists whose objects are compressed once the type's
// Codec has trained, and that it stays intact while the decoder decodes
// more (it is carved from chunks the decoder shares between objects).
func TestText(t *testing.T) {
	// The paths the index projects for Pods, one of them searched too:
	// the decoder reads both in one walk.
	typ := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true,
		Codec: compact.NewCodec("pods", 0), Projected: fieldpath.NewSet(index.New(index.Options{}).IndexedPaths("pods"))}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	page := func(from, n int) []byte {
		var buf bytes.Buffer
		buf.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[`)
		for i := from; i < from+n; i++ {
			if i > from {
				buf.WriteByte(',')
			}
			raw := graphqltest.RealisticPod(typ, "c1", i, base).Raw()
			raw = bytes.Replace(raw, []byte(`"apiVersion":"v1","kind":"Pod",`), nil, 1)
			// Annotations of every length, some beyond a chunk, and a few
			// upper-case words, which tokens lowercase.
			note := strings.Repeat(fmt.Sprintf("Release%d word%d ", i, i%7), i%50) + strings.Repeat("x", i%3*3000)
			raw = bytes.Replace(raw, []byte(`"annotations":{`), fmt.Appendf(nil, `"annotations":{"note":%q,`, note), 1)
			buf.Write(raw)
		}
		buf.WriteString(`]}`)
		return buf.Bytes()
	}
	d := wire.NewDecoder("c1", typ, false)
	var items []*wire.Decoded
	for from := 0; from < 3000; from += 500 {
		list, err := d.List(page(from, 500))
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			items = append(items, item.(*wire.Decoded))
		}
	}
	if !typ.Codec.Trained() || !items[len(items)-1].Stored().Body.Compressed() {
		t.Fatal("the last objects are not compressed: the test does not cover compressed bodies")
	}
	r := new(object.BodyReader)
	for i, o := range items {
		doc := r.Doc(o.Object)
		want := search.AppendBodyTokens(nil, o.Object, doc)
		if !slices.Equal(o.Text, want) {
			t.Fatalf("item %d: Text %q, the stored body's %q", i, o.Text, want)
		}
		for _, p := range typ.Projected.Paths() {
			got, ok := o.Projected(p)
			if want := p.AppendJSONIn(nil, doc); !ok || !bytes.Equal(got, want) {
				t.Fatalf("item %d: %s projected as %s, the stored body's %s", i, p, got, want)
			}
		}
		if i%50 > 0 && !slices.Contains(o.Text, fmt.Sprintf("release%d", i)) {
			t.Fatalf("item %d: Text %q lacks its note", i, o.Text)
		}
	}
}
