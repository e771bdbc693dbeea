package fieldpath

import (
	"encoding/json"
	"testing"
)

// FuzzParse checks that what parses prints to a path that parses to the
// same path, and that nothing panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"status.phase", "spec.containers[].image", `metadata.annotations["example.com/owner"]`,
		"cluster", `["cluster"]`, `a["\u00e9\x00"]`, "a[][]", "a[", `a["b`, "", ".", "a..b", `a["\"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", text, p.String(), err)
		}
		if again.String() != p.String() || again.Crosses() != p.Crosses() || again.IsCluster() != p.IsCluster() ||
			len(again.segs) != len(p.segs) {
			t.Fatalf("Parse(%q) = %q, reparsed %q", text, p, again)
		}
		for i := range p.segs {
			if p.segs[i] != again.segs[i] {
				t.Fatalf("Parse(%q): step %d is %+v, reparsed %+v", text, i, p.segs[i], again.segs[i])
			}
		}
	})
}

// FuzzEach checks that evaluation never panics on any path and any bytes,
// and that a key, however odd, finds its own member.
func FuzzEach(f *testing.F) {
	f.Add("status.phase", []byte(pod), "example.com/owner")
	f.Add("spec.containers[].ports[].containerPort", []byte(pod), "a.b*c?#@|")
	f.Add("a[].b", []byte(`{"a":[{"b":1},{"b":[1,{"c"`), `\`)
	f.Add("a", []byte(`{"a":"\u00"}`), "")
	f.Add("status.x", []byte(`{"spec":{"status":1},"status":{"x":[1,2]},"z":{"x":3}}`), "")
	f.Add("spec[].x", []byte(`{"spec":[{"x":1}],"status":"s"}`), "")
	f.Fuzz(func(t *testing.T, path string, raw []byte, key string) {
		if p, err := Parse(path); err == nil {
			p.Each("c", raw, func(Value) bool { return true })
			whole := p.AppendJSON(nil, "c", raw)
			// Starting at spec or status changes nothing in valid JSON.
			if json.Valid(raw) {
				if in := p.AppendJSONIn(nil, Members("c", raw)); string(in) != string(whole) {
					t.Fatalf("%s in %s: %s from the members, %s from the start", p, raw, in, whole)
				}
			}
		}
		if key == "" {
			return
		}
		doc, err := json.Marshal(map[string]any{key: "found", key + "x": "other", "x" + key: "other"})
		if err != nil {
			return
		}
		var k string // the key as JSON round-trips it (invalid UTF-8 becomes U+FFFD)
		var m map[string]any
		if json.Unmarshal(doc, &m) != nil {
			return
		}
		for mk, v := range m {
			if v == "found" {
				k = mk
			}
		}
		p := Path{segs: []segment{newKey(k)}}
		p.finish()
		if p.IsCluster() {
			return
		}
		if got := string(p.AppendJSON(nil, "c", doc)); got != `"found"` {
			t.Fatalf("key %q in %s: got %s", k, doc, got)
		}
	})
}
