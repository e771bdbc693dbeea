package fieldselector

import "testing"

// FuzzParse checks that what parses prints to a selector that parses to
// the same selector, and that matching never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"status.phase!=Running,spec.nodeName in (node-1,node-2),status.containerStatuses[].restartCount>3",
		`metadata.annotations["example.com/owner"]=team-a`, "!spec.nodeName", "cluster notin (a, b)",
		`a=\,\(\)\\\ `, `a!==b`, "a<1e3", "a in (", "a=(", ",", `a["\"]=1`, "a>-0", "in in (in)",
	} {
		f.Add(s, []byte(pod))
	}
	f.Fuzz(func(t *testing.T, text string, raw []byte) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		again, err := Parse(s.String())
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", text, s, err)
		}
		if again.String() != s.String() || len(again.reqs) != len(s.reqs) {
			t.Fatalf("Parse(%q) = %q, reparsed %q", text, s, again)
		}
		for i := range s.reqs {
			a, b := s.reqs[i], again.reqs[i]
			if a.op != b.op || a.path.String() != b.path.String() || len(a.values) != len(b.values) {
				t.Fatalf("Parse(%q): requirement %d is %q, reparsed %q", text, i, a, b)
			}
			for j := range a.values {
				if a.values[j] != b.values[j] {
					t.Fatalf("Parse(%q): requirement %d value %d is %+v, reparsed %+v", text, i, j, a.values[j], b.values[j])
				}
			}
		}
		s.Matches("c", raw)
		s.Matches("c", []byte(pod))
	})
}
