package fieldselector

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{name: "empty", text: "", want: ""},
		{name: "blank", text: "  ", want: ""},
		{name: "equals", text: "status.phase=Running", want: "status.phase=Running"},
		{name: "double equals", text: "status.phase==Running", want: "status.phase=Running"},
		{name: "not equals", text: "status.phase!=Running", want: "status.phase!=Running"},
		{name: "in", text: "spec.nodeName in (node-2, node-1)", want: "spec.nodeName in (node-1,node-2)"},
		{name: "in without space", text: "spec.nodeName in(node-1)", want: "spec.nodeName in (node-1)"},
		{name: "notin", text: "status.phase notin (Failed,Succeeded,Failed)", want: "status.phase notin (Failed,Succeeded)"},
		{name: "exists", text: "spec.nodeName", want: "spec.nodeName"},
		{name: "does not exist", text: "! spec.nodeName", want: "!spec.nodeName"},
		{name: "greater", text: "status.containerStatuses[].restartCount>3", want: "status.containerStatuses[].restartCount>3"},
		{name: "less, canonical number", text: "spec.priority < 10.50", want: "spec.priority<10.5"},
		{name: "sorted and deduplicated", text: "b=1, a=2,b=1", want: "a=2,b=1"},
		{name: "spaces", text: "  status.phase  =  Running  ,  spec.nodeName  ", want: "spec.nodeName,status.phase=Running"},
		{name: "empty value", text: `metadata.annotations["x.y"]=`, want: `metadata.annotations["x.y"]=`},
		{name: "escapes", text: `a=x\,y\(z\)\\, b in (\ lead, trail\ )`, want: `a=x\,y\(z\)\\,b in (\ lead,trail\ )`},
		{name: "leading equals in a value", text: `a=\=b`, want: `a=\=b`},
		{name: "not equals a leading equals", text: `a!==b`, want: `a!=\=b`},
		{name: "image", text: "spec.containers[].image=registry.example.com/app@sha256:abc", want: "spec.containers[].image=registry.example.com/app@sha256:abc"},
		{name: "quoted key", text: `metadata.annotations["example.com/owner"]=team-a`, want: `metadata.annotations["example.com/owner"]=team-a`},
		{name: "cluster", text: "cluster in (prod-eu,prod-us)", want: "cluster in (prod-eu,prod-us)"},
		{name: "internal spaces stay", text: "a=hello  world", want: "a=hello  world"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.text, err)
			}
			if got := s.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if s.Empty() != (tt.want == "") {
				t.Errorf("Empty() = %v", s.Empty())
			}
			again, err := Parse(s.String())
			if err != nil || again.String() != s.String() {
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
		{name: "empty requirement", text: "a=1,,b", reason: "empty requirement", offset: 4},
		{name: "trailing comma", text: "a=1,", reason: "empty requirement", offset: 4},
		{name: "bad path", text: "a..b=1", reason: "invalid path: expected a key", offset: 2},
		{name: "unquoted slash", text: "metadata.annotations.example.com/owner=x", reason: "expected an operator", offset: 32},
		{name: "no path", text: "=x", reason: "invalid path: expected a key", offset: 0},
		{name: "greater than a word", text: "a>many", reason: `> needs a number, got "many"`, offset: 2},
		{name: "greater or equal", text: "a>=3", reason: `> needs a number, got "=3"`, offset: 2},
		{name: "not a number", text: "a<0x10", reason: "< needs a number", offset: 2},
		{name: "in without list", text: "a in x", reason: "expected ( after in", offset: 5},
		{name: "unclosed list", text: "a in (x,y", reason: "expected ) to close the list", offset: 9},
		{name: "parenthesis in a value", text: "a=(x)", reason: `unexpected '(' in a value`, offset: 2},
		{name: "junk after list", text: "a in (x) y", reason: "expected a comma or the end", offset: 9},
		{name: "junk after absent", text: "!a=b", reason: "expected a comma or the end", offset: 2},
		{name: "dangling backslash", text: `a=x\`, reason: "a backslash ends the selector", offset: 3},
		{name: "two words", text: "status.phase Running", reason: "expected an operator", offset: 13},
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
		})
	}
}

// pod is a Pod's stored JSON, compact as object.NewObject writes it.
const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"shop",` +
	`"annotations":{"example.com/owner":"team-a","count":"12"}},` +
	`"spec":{"nodeName":"node-1","containers":[{"name":"app","image":"nginx:1.25"},{"name":"side","image":"envoy:1.30"}],` +
	`"hostNetwork":false,"priority":null,"replicas":3},` +
	`"status":{"phase":"Running","containerStatuses":[{"name":"app","ready":true,"restartCount":5},{"name":"side","ready":false,"restartCount":0}]}}`

func TestMatches(t *testing.T) {
	tests := []struct {
		selector string
		want     bool
	}{
		{"", true},
		{"status.phase=Running", true},
		{"status.phase==Running", true},
		{"status.phase=Failed", false},
		{"status.phase!=Running", false},
		{"status.phase!=Failed", true},
		{"status.reason!=Evicted", true}, // absent: nothing equals
		{"status.reason=", false},        // absent is not the empty string
		{"status.phase in (Failed,Running)", true},
		{"status.phase in (Failed,Pending)", false},
		{"status.phase notin (Failed,Pending)", true},
		{"status.phase notin (Running)", false},
		{"status.reason notin (Evicted)", true},
		{"spec.nodeName", true},
		{"!spec.nodeName", false},
		{"status.reason", false},
		{"!status.reason", true},
		{"spec.priority", false}, // null is absent
		{"!spec.priority", true},
		{"spec.hostNetwork=false", true},
		{"spec.hostNetwork=true", false},
		{"spec.hostNetwork!=true", true},
		{"spec.replicas=3", true},
		{"spec.replicas=3.0", true},
		{"spec.replicas=03", true},
		{"spec.replicas!=4", true},
		{"spec.replicas>2", true},
		{"spec.replicas>3", false},
		{"spec.replicas<3.5", true},
		{"spec.replicas<-1", false},
		// Strings that hold numbers compare as numbers; others never do.
		{"metadata.annotations.count>11", true},
		{"status.phase>0", false},
		{"status.phase<0", false},
		// Across arrays: some element satisfies; != and notin: no element equals.
		{"spec.containers[].image=envoy:1.30", true},
		{"spec.containers[].image=redis", false},
		{"spec.containers[].image!=envoy:1.30", false},
		{"spec.containers[].image!=redis", true},
		{"spec.containers[].image in (redis,nginx:1.25)", true},
		{"spec.containers[].image notin (redis,nginx:1.25)", false},
		{"spec.containers[].image notin (redis)", true},
		{"status.containerStatuses[].restartCount>3", true},
		{"status.containerStatuses[].restartCount>5", false},
		{"status.containerStatuses[].restartCount<1", true},
		{"status.containerStatuses[].ready=false", true},
		{"spec.initContainers[].image", false},
		{"!spec.initContainers[].image", true},
		{"spec.initContainers[].image!=x", true},
		// Objects and arrays equal nothing.
		{"spec=x", false},
		{"spec.containers=x", false},
		{"spec.containers", true},
		// Quoted keys and the cluster.
		{`metadata.annotations["example.com/owner"]=team-a`, true},
		{"cluster=prod-eu", true},
		{"cluster in (prod-us)", false},
		{"cluster!=prod-us", true},
		// All must hold.
		{"status.phase=Running,spec.nodeName=node-1", true},
		{"status.phase=Running,spec.nodeName=node-2", false},
		{"cluster=prod-eu,spec.containers[].image=nginx:1.25,status.containerStatuses[].restartCount>4", true},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			s, err := Parse(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Matches("prod-eu", []byte(pod)); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequirements(t *testing.T) {
	s, err := Parse("spec.nodeName in (b,a), !x")
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		Path   string
		Op     Operator
		Values []string
	}
	var got []req
	for _, r := range s.Requirements() {
		got = append(got, req{r.Path().String(), r.Operator(), r.Values()})
	}
	want := []req{{"x", DoesNotExist, []string{}}, {"spec.nodeName", In, []string{"a", "b"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Requirements (-want +got):\n%s", diff)
	}
}

// TestEqual: selectors that select the same are Equal, whatever the order
// and spelling of their requirements, and go-cmp compares them by it.
func TestEqual(t *testing.T) {
	parse := func(s string) Selector {
		t.Helper()
		sel, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel
	}
	a, b, c := parse("spec.nodeName=n1,status.phase==Running"), parse("status.phase=Running, spec.nodeName=n1"), parse("status.phase=Running")
	if !a.Equal(b) || a.Equal(c) || !(Selector{}).Equal(parse("")) {
		t.Errorf("Equal: %q %q %q", a, b, c)
	}
	if !cmp.Equal(struct{ S Selector }{a}, struct{ S Selector }{b}) {
		t.Error("go-cmp does not use Equal")
	}
}

// TestOf checks that a selector made of requirements is the one Parse
// reads from their text.
func TestOf(t *testing.T) {
	path := fieldpath.MustParse("spec.volumes[].configMap.name")
	other := fieldpath.MustParse("spec.nodeName")
	for _, value := range []string{"web", "a,b", "(x)", "=eq", " padded ", `back\slash`, "3"} {
		got := Of(Compare(path, NotEquals, value), Compare(other, Equals, value))
		want, err := Parse(got.String())
		if err != nil {
			t.Fatalf("%q: %v", got.String(), err)
		}
		if !got.Equal(want) || len(want.Requirements()) != 2 || want.Requirements()[0].Values()[0] != value {
			t.Errorf("%q: Of gives %q, which parses to %q", value, got.String(), want.String())
		}
	}
}

func TestCompareIn(t *testing.T) {
	path := fieldpath.MustParse("spec.nodeName")
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{name: "one", values: []string{"node-1"}, want: "spec.nodeName in (node-1)"},
		{name: "sorted and deduplicated", values: []string{"node-2", "node-1", "node-2"}, want: "spec.nodeName in (node-1,node-2)"},
		{name: "escaped", values: []string{"a,b", "(c)"}, want: `spec.nodeName in (\(c\),a\,b)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CompareIn(path, tt.values...)
			if r.String() != tt.want {
				t.Errorf("CompareIn = %q, want %q", r.String(), tt.want)
			}
			parsed, err := Parse(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(parsed.Requirements()[0].Values(), r.Values()); diff != "" {
				t.Errorf("values differ from Parse's (-parsed +CompareIn):\n%s", diff)
			}
		})
	}
}
