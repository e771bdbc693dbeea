package fieldpath

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"
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
	f.Add("a.0.b", []byte(`{"a":[{"b":1}],"x":{"0":{"b":2}}}`), "")
	f.Add("x.0.b", []byte(`{"a":[{"b":1}],"x":{"0":{"b":2}}}`), "")
	f.Add("a.b.c", []byte(`{"a":{"b":[{"c":1}]}}`), "")
	f.Fuzz(func(t *testing.T, path string, raw []byte, key string) {
		if p, err := Parse(path); err == nil {
			p.Each("c", raw, func(Value) bool { return true })
			whole := p.AppendJSON(nil, "c", raw)
			// Keys looked up together find what one key at a time finds.
			if step := stepwise(p, raw); json.Valid(raw) && !p.IsCluster() && step != string(whole) {
				t.Fatalf("%s in %s: %s, one key at a time %s", p, raw, whole, step)
			}
			// The values read back from what AppendJSON wrote are those
			// Each found: the index reads projected values so.
			if json.Valid(raw) {
				if got, want := eachValues(func(fn func(Value) bool) { p.EachInJSON(whole, fn) }),
					eachValues(func(fn func(Value) bool) { p.Each("c", raw, fn) }); got != want {
					t.Fatalf("%s in %s: %s read from %s, %s from the object", p, raw, got, whole, want)
				}
			}
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

// stepwise evaluates p one key at a time, as AppendJSON did before keys
// were looked up together: the reference for runs.
func stepwise(p Path, raw []byte) string {
	var vals []string
	var walk func(r gjson.Result, segs []segment)
	walk = func(r gjson.Result, segs []segment) {
		for len(segs) > 0 {
			s := segs[0]
			segs = segs[1:]
			if s.each {
				if r.IsArray() {
					r.ForEach(func(_, e gjson.Result) bool { walk(e, segs); return true })
				}
				return
			}
			if !r.IsObject() {
				return
			}
			r = r.Get(s.gkey)
		}
		if v, ok := valueOf(r); ok {
			vals = append(vals, string(v.AppendJSON(nil)))
		}
	}
	walk(gjson.ParseBytes(raw), p.segs)
	switch {
	case len(vals) == 0:
		return "null"
	case p.crosses:
		out := "["
		for i, v := range vals {
			if i > 0 {
				out += ","
			}
			out += v
		}
		return out + "]"
	}
	return vals[0]
}

// eachValues renders the values each gives, in order, with their kinds.
func eachValues(each func(fn func(Value) bool)) string {
	var out []byte
	each(func(v Value) bool {
		out = append(out, byte('0'+v.Kind), ':')
		switch v.Kind {
		case String:
			out = append(out, v.Str...)
		case Number:
			out = strconv.AppendFloat(out, v.Num, 'g', -1, 64)
		case Bool:
			out = strconv.AppendBool(out, v.Bool)
		default:
			out = v.AppendJSON(out)
		}
		out = append(out, ';')
		return true
	})
	return string(out)
}

// FuzzSet checks that a Set reads what each of its paths reads alone in
// valid JSON without repeated keys (as API servers send), from the start, from spec or status, and in a status alone;
// and that it never panics on any bytes.
func FuzzSet(f *testing.F) {
	f.Add("status.phase", "spec.containers[].image", "spec.containers[].env[].name", []byte(pod))
	f.Add("a[].b", "a[].b", "a", []byte(`{"a":[{"b":1},{"b":[1,{"c"`))
	f.Add("status.x", "status", "cluster", []byte(`{"spec":{"status":1},"status":{"x":[1,2]},"z":{"x":3}}`))
	f.Add("a.0.b", "a[].b", "x.0.b", []byte(`{"a":[{"b":1}],"x":{"0":{"b":2}}}`))
	f.Add("a.b.c", "a.b", "a.b[].c", []byte(`{"a":{"b":[{"c":1}]},"a":{"b":2}}`))
	// What the walk of a Set skips or reads by hand: escaped quotes and
	// backslashes before a closing quote, an escaped key, whitespace
	// everywhere, nested arrays, brackets in strings, and a number.
	f.Add("a[].b", "c", "d.e", []byte(` { "x" : "q\"}]\\" , "a" : [ [ {"b":"\\"} ] , {"b" : 2.5e3 } ] , "c\u0022":1, "c" : "{[" , "d":{"e":null} } `))
	f.Add("status.conditions[].type", "spec.x", "status", []byte(`{"spec":{"x":"]}\""},"status":{"conditions":[{"type":"A"},{"type":"B\u00e9"}]}}`))
	f.Fuzz(func(t *testing.T, p1, p2, p3 string, raw []byte) {
		var paths []Path
		for _, text := range []string{p1, p2, p3} {
			if p, err := Parse(text); err == nil {
				paths = append(paths, p)
			}
		}
		s := NewSet(paths)
		// Among repeated keys, one lookup of a.b may find b in a later a.
		comparable := json.Valid(raw) && !repeatsKeys(raw)
		docs := []Doc{{Cluster: "c", Raw: raw}}
		if json.Valid(raw) {
			docs = append(docs, Members("c", raw))
			if st := gjson.GetBytes(raw, "status"); st.Index > 0 {
				docs = append(docs, Doc{Cluster: "c", Raw: raw[st.Index : st.Index+len(st.Raw)], StatusOnly: true})
			}
		}
		for _, d := range docs {
			// Read in order, as the decoder reads an object's paths.
			inOrder := s.Read(d)
			jsons, values := make([]string, len(paths)), make([]string, len(paths))
			for i := range paths {
				got := inOrder.JSON(i)
				if want := paths[i].AppendJSONIn(nil, d); comparable && string(got) != string(want) {
					t.Fatalf("%s in %s (status alone %t): %s in a set, %s alone", paths[i], d.Raw, d.StatusOnly, got, want)
				}
				jsons[i] = string(got)
				var each []byte
				inOrder.Each(i, func(v Value) bool { each = v.AppendJSON(append(each, ' ')); return true })
				values[i] = string(each)
			}
			inOrder.Release()
			// What one walk found, read in any order, is what it gives
			// read in order.
			found := s.Read(d)
			for _, i := range []int{2, 0, 1, 1, 2} {
				if i >= len(paths) {
					continue
				}
				if got := string(found.JSON(i)); got != jsons[i] {
					t.Fatalf("%s in %s, read out of order: %s, in order %s", paths[i], d.Raw, got, jsons[i])
				}
				var each []byte
				found.Each(i, func(v Value) bool { each = v.AppendJSON(append(each, ' ')); return true })
				if string(each) != values[i] {
					t.Fatalf("%s in %s: Each out of order gives%s, in order%s", paths[i], d.Raw, each, values[i])
				}
			}
			found.Release()
		}
	})
}

// repeatsKeys reports whether an object in raw, valid JSON, has a key twice.
func repeatsKeys(raw []byte) bool {
	var repeats func(r gjson.Result) bool
	repeats = func(r gjson.Result) bool {
		seen := map[string]bool{}
		found := false
		r.ForEach(func(k, v gjson.Result) bool {
			if r.IsObject() {
				found = seen[k.Str]
				seen[k.Str] = true
			}
			found = found || (v.IsObject() || v.IsArray()) && repeats(v)
			return !found
		})
		return found
	}
	return repeats(gjson.ParseBytes(raw))
}
