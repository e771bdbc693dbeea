package informers

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/graphqltest"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/wire"
)

// TestPrepareWithoutTheDecodersText: an object the wire decoder did not
// hand over as it decoded it (the reflector's copy, a
// DeletedFinalStateUnknown's) is inserted with the search text the
// decoder would have read from its JSON.
func TestPrepareWithoutTheDecodersText(t *testing.T) {
	typ := &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	raw := graphqltest.RealisticPod(typ, "c1", 7, time.Now()).Raw()
	d, err := wire.NewDecoder("c1", typ, false).Object(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := prepare(d, true)
	if len(want.Text) == 0 {
		t.Fatal("the decoder read no search text from a realistic Pod")
	}
	got := prepare(&wire.Decoded{Object: d.Object}, false)
	if got.Object != d.Object || !slices.Equal(got.Text, want.Text) {
		t.Errorf("prepared without the decoder's text: %q, the decoder's %q", got.Text, want.Text)
	}
	if slices.Equal(want.Text, index.TextTokens(object.Build("c1", typ, object.Meta{Name: "other"}, []byte(`{}`)), new(object.BodyReader))) {
		t.Error("an empty object has the Pod's text: the comparison proves nothing")
	}
}
