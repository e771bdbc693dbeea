package fieldpath

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, text, want string
		crosses, cluster bool
	}{
		{name: "one key", text: "kind", want: "kind"},
		{name: "dotted", text: "status.phase", want: "status.phase"},
		{name: "array", text: "spec.containers[].image", want: "spec.containers[].image", crosses: true},
		{name: "nested arrays", text: "spec.containers[].ports[].containerPort", want: "spec.containers[].ports[].containerPort", crosses: true},
		{name: "ends with array", text: "status.conditions[]", want: "status.conditions[]", crosses: true},
		{name: "array of arrays", text: "a[][]", want: "a[][]", crosses: true},
		{name: "quoted key", text: `metadata.annotations["example.com/owner"]`, want: `metadata.annotations["example.com/owner"]`},
		{name: "quoted first key", text: `["a.b"].c`, want: `["a.b"].c`},
		{name: "quoted plain key prints plain", text: `metadata["labels"]["app"]`, want: "metadata.labels.app"},
		{name: "escapes in a quoted key", text: `a["q\"uote\\"]`, want: `a["q\"uote\\"]`},
		{name: "cluster", text: "cluster", want: "cluster", cluster: true},
		{name: "quoted cluster", text: `["cluster"]`, want: "cluster", cluster: true},
		{name: "cluster below the root is a key", text: "spec.cluster", want: "spec.cluster"},
		{name: "dashes and digits", text: "data.my-key_2", want: "data.my-key_2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.text, err)
			}
			if got := p.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if p.Crosses() != tt.crosses || p.IsCluster() != tt.cluster {
				t.Errorf("Crosses() = %v, IsCluster() = %v; want %v, %v", p.Crosses(), p.IsCluster(), tt.crosses, tt.cluster)
			}
			again, err := Parse(p.String())
			if err != nil || again.String() != p.String() {
				t.Errorf("Parse(String()) = %q, %v", again.String(), err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text, reason string
		offset             int
	}{
		{name: "empty", text: "", reason: "expected a key", offset: 0},
		{name: "leading dot", text: ".a", reason: `expected a key, found '.'`, offset: 0},
		{name: "trailing dot", text: "a.", reason: "expected a key", offset: 2},
		{name: "double dot", text: "a..b", reason: `expected a key, found '.'`, offset: 2},
		{name: "starts with array", text: "[].a", reason: "starts with a key", offset: 0},
		{name: "unquoted slash", text: "metadata.annotations.example.com/owner", reason: `unexpected '/'`, offset: 32},
		{name: "unterminated bracket", text: "a[", reason: "expected a quoted key", offset: 2},
		{name: "unquoted bracket key", text: "a[b]", reason: "expected a quoted key", offset: 2},
		{name: "index", text: "a[0]", reason: "expected a quoted key", offset: 2},
		{name: "unterminated quote", text: `a["b]`, reason: "unterminated quoted key", offset: 5},
		{name: "missing close bracket", text: `a["b"`, reason: `expected "]"`, offset: 5},
		{name: "empty quoted key", text: `a[""]`, reason: "empty key", offset: 2},
		{name: "bad escape", text: `a["\q"]`, reason: "invalid quoted key", offset: 2},
		{name: "key after array without dot", text: "a[]b", reason: `unexpected 'b'`, offset: 3},
		{name: "bare quote", text: `a."b"`, reason: `quote a key as`, offset: 2},
		{name: "space", text: "a .b", reason: `unexpected ' '`, offset: 1},
		{name: "too deep", text: strings.Repeat("a.", maxSegments) + "a", reason: "more than 64 steps", offset: 2 * maxSegments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, want a *SyntaxError", tt.text, err)
			}
			if !strings.Contains(se.Reason, tt.reason) || se.Offset != tt.offset {
				t.Errorf("Parse(%q): reason %q at %d, want %q at %d", tt.text, se.Reason, se.Offset, tt.reason, tt.offset)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tt.text)) {
				t.Errorf("error %q does not quote the path", err)
			}
		})
	}
}

func TestParsePrefix(t *testing.T) {
	p, n, err := ParsePrefix("status.phase!=Running")
	if err != nil || p.String() != "status.phase" || n != len("status.phase") {
		t.Fatalf("ParsePrefix = %q, %d, %v", p, n, err)
	}
	p, n, err = ParsePrefix(`metadata.annotations["a,b"] in (x)`)
	if err != nil || p.String() != `metadata.annotations["a,b"]` || n != len(`metadata.annotations["a,b"]`) {
		t.Fatalf("ParsePrefix = %q, %d, %v", p, n, err)
	}
}

// pod is a Pod's stored JSON, compact as object.NewObject writes it.
const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"shop",` +
	`"annotations":{"example.com/owner":"team-a","a\u0026b":"amp","empty":""},"labels":{"app":"web"}},` +
	`"spec":{"nodeName":"node-1","containers":[{"name":"app","image":"nginx:1.25","ports":[{"containerPort":80},{"containerPort":443}]},` +
	`{"name":"side","image":"envoy:1.30"}],"priority":null,"hostNetwork":false},` +
	`"status":{"phase":"Running","containerStatuses":[{"name":"app","ready":true,"restartCount":3},{"name":"side","ready":false,"restartCount":0}]}}`

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"status.phase", `"Running"`},
		{"spec.nodeName", `"node-1"`},
		{"cluster", `"prod-eu"`},
		{"spec.containers[].image", `["nginx:1.25","envoy:1.30"]`},
		{"spec.containers[].ports[].containerPort", `[80,443]`},
		{"status.containerStatuses[].restartCount", `[3,0]`},
		{"status.containerStatuses[].ready", `[true,false]`},
		{"spec.hostNetwork", `false`},
		{`metadata.annotations["example.com/owner"]`, `"team-a"`},
		{`metadata.annotations["a&b"]`, `"amp"`},
		{`metadata.annotations.empty`, `""`},
		{"metadata.labels", `{"app":"web"}`},
		{"spec.containers[].ports", `[[{"containerPort":80},{"containerPort":443}]]`},
		{"spec.priority", `null`},
		{"status.reason", `null`},
		{"spec.initContainers[].image", `null`},
		{"spec.containers[].missing", `null`},
		{"spec.containers.image", `null`}, // a key does not apply to an array
		{"status.phase[]", `null`},        // [] does not apply to a string
		{"metadata.name.first", `null`},   // a key does not apply to a string
		{"spec.containers[].name", `["app","side"]`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := string(MustParse(tt.path).AppendJSON([]byte("x"), "prod-eu", []byte(pod)))
			if diff := cmp.Diff("x"+tt.want, got); diff != "" {
				t.Errorf("AppendJSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEach(t *testing.T) {
	var got []Value
	MustParse("status.containerStatuses[].restartCount").Each("c", []byte(pod), func(v Value) bool {
		got = append(got, v)
		return true
	})
	want := []Value{{Kind: Number, Num: 3, raw: "3"}, {Kind: Number, Num: 0, raw: "0"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Value{})); diff != "" {
		t.Errorf("Each (-want +got):\n%s", diff)
	}
	// Stopping early.
	n := 0
	if MustParse("spec.containers[].image").Each("c", []byte(pod), func(Value) bool { n++; return false }) || n != 1 {
		t.Errorf("Each did not stop: %d calls", n)
	}
	if !MustParse("status.phase").Has("c", []byte(pod)) || MustParse("spec.priority").Has("c", []byte(pod)) {
		t.Error("Has: wrong answer")
	}
}

func BenchmarkEach(b *testing.B) {
	raw := []byte(pod)
	for _, path := range []string{"status.phase", "spec.containers[].image"} {
		p := MustParse(path)
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Each("c", raw, func(Value) bool { return true })
			}
		})
	}
}

// TestEachInMembers: a Doc that knows where spec and status begin reads
// the same values as reading from the start, for paths into them and
// others, whatever the members hold.
func TestEachInMembers(t *testing.T) {
	raws := []string{
		pod,
		`{"apiVersion":"v1","metadata":{"name":"a"},"spec":{"x":1,"status":{"y":2}},"status":{"phase":"Running","x":[1,{"y":2}]},"z":3}`,
		`{"status":"s","spec":[{"x":1},{"x":2}]}`,
		`{"metadata":{"name":"no spec"}}`,
		`{"spec":null,"status":{}}`,
		`{"status":{"phase":"first"},"status":{"phase":"second"}}`,
	}
	paths := []string{"status.phase", "status.x", "status.x[].y", "status", "spec.x", "spec[].x", "spec.status.y",
		"spec.containers[].image", "metadata.name", "z", "cluster"}
	for _, raw := range raws {
		d := Members("c", []byte(raw))
		for _, text := range paths {
			p := MustParse(text)
			want := string(p.AppendJSON(nil, "c", []byte(raw)))
			if got := string(p.AppendJSONIn(nil, d)); got != want {
				t.Errorf("%s in %s: %s from the members (spec at %d, status at %d), %s from the start", text, raw, got, d.Spec, d.Status, want)
			}
			if p.HasIn(d) != p.Has("c", []byte(raw)) {
				t.Errorf("%s in %s: Has differs", text, raw)
			}
		}
	}
	if d := Members("c", []byte(raws[1])); d.Spec == 0 || d.Status == 0 || raws[1][d.Status] != '{' {
		t.Errorf("Members found spec at %d and status at %d", d.Spec, d.Status)
	}
}

func TestSetEqual(t *testing.T) {
	a := NewSet([]Path{MustParse("status.phase"), MustParse("spec.nodeName")})
	if !a.Equal(NewSet([]Path{MustParse("status.phase"), MustParse("spec.nodeName")})) {
		t.Error("sets of the same paths differ")
	}
	if a.Equal(NewSet([]Path{MustParse("spec.nodeName"), MustParse("status.phase")})) || a.Equal(Set{}) {
		t.Error("sets of other paths, or in another order, are equal")
	}
	if !(Set{}).Equal(NewSet(nil)) {
		t.Error("empty sets differ")
	}
	f := (Set{}).Read(Doc{Raw: []byte(pod)})
	defer f.Release()
	if !f.Each(0, func(Value) bool { return false }) {
		t.Error("the zero Set found a value")
	}
}

// TestFollow follows a Set as a scan of its own would (package wire's
// FuzzObject checks such a scan against Set.Read on any object).
func TestFollow(t *testing.T) {
	s := NewSet([]Path{MustParse("spec.containers[].image"), MustParse("cluster"), MustParse("spec"), MustParse("spec.nodeName")})
	root := s.Root()
	if root.IsZero() || root.Ends() {
		t.Fatal("the root of a Set with paths: zero, or paths end there")
	}
	if n, k := root.Member([]byte("status")); !n.IsZero() || k != -1 {
		t.Errorf("a member no path goes into: %v, %d", n, k)
	}
	spec, k := root.Member([]byte("spec"))
	if spec.IsZero() || !spec.Ends() || k != 0 {
		t.Fatalf("spec: zero %v, ends %v, number %d", spec.IsZero(), spec.Ends(), k)
	}
	containers, _ := spec.Member([]byte("containers"))
	image, _ := containers.Elements().Member([]byte("image"))
	if node, k := spec.Member([]byte("nodeName")); !node.Ends() || k != 1 {
		t.Errorf("spec.nodeName: ends %v, number %d", node.Ends(), k)
	}
	if n, _ := containers.Elements().Member([]byte("name")); !n.IsZero() || !n.Elements().IsZero() || n.Ends() {
		t.Error("a container's name: no path goes there, yet its Node is not zero")
	}
	f := s.Collect("c1")
	defer f.Release()
	// Recorded in document order, the values of the paths interleaved.
	f.Add(image, []byte(`"a"`))
	f.Add(image, []byte(`null`))
	f.Add(containers, []byte(`"not a path's end"`))
	f.Add(image, []byte(`"b"`))
	f.Add(spec, []byte(`{"containers":[{"image":"a"},{"image":null},{"image":"b"}]}`))
	f.Done()
	for i, want := range []string{`["a","b"]`, `"c1"`, `{"containers":[{"image":"a"},{"image":null},{"image":"b"}]}`, `null`} {
		if got := string(f.JSON(i)); got != want {
			t.Errorf("%s: %s, want %s", s.Paths()[i], got, want)
		}
	}
}
