package search

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
)

func tokensOf(s string) []string {
	var out []string
	Tokens(s, func(tok string) bool { out = append(out, tok); return true })
	return out
}

func TestTokens(t *testing.T) {
	long := strings.Repeat("a", MaxTokenLen+10)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"image", "docker.io/library/nginx:1.25.3", []string{"docker", "io", "library", "nginx", "1", "25", "3"}},
		{"name", "web-7d9f8c-abcde", []string{"web", "7d9f8c", "abcde"}},
		{"lowercased", "Team-A_Owner", []string{"team", "a", "owner"}},
		{"only separators", " -./_:", nil},
		{"empty", "", nil},
		{"unicode letters and digits", "Größe=٣ café", []string{"größe", "٣", "café"}},
		{"cut", long + "-b", []string{long[:MaxTokenLen], "b"}},
		{"cut at a character boundary", strings.Repeat("a", MaxTokenLen-1) + "é", []string{strings.Repeat("a", MaxTokenLen-1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tokensOf(tc.text), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Tokens(%q) (-want +got):\n%s", tc.text, diff)
			}
		})
	}
	t.Run("stops", func(t *testing.T) {
		n := 0
		if Tokens("a b c", func(string) bool { n++; return n < 2 }) || n != 2 {
			t.Errorf("Tokens went on after false: %d calls", n)
		}
	})
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text, want string
	}{
		{"redis prod", "prod redis"},
		{"  Redis,PROD ", "prod redis"},
		{"re redis", "redis"},
		{"redis re redisinsight", "redisinsight"},
		{"nginx:1.25", "1 25 nginx"},
		{"", ""},
		{" :: ", ""},
		{"a a a", "a"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			q, err := Parse(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if q.String() != tc.want || q.Empty() != (tc.want == "") {
				t.Errorf("Parse(%q) = %q (empty %v), want %q", tc.text, q, q.Empty(), tc.want)
			}
			again, err := Parse(q.String())
			if err != nil || again.String() != q.String() {
				t.Errorf("Parse(%q) = %q, %v: not the same query", q, again, err)
			}
		})
	}
	words := strings.Repeat("w", 0)
	for i := range MaxWords + 1 {
		words += string(rune('a'+i)) + "x "
	}
	if _, err := Parse(words); err == nil || !strings.Contains(err.Error(), "more than 16 words") {
		t.Errorf("Parse of %d words: %v, want too many words", MaxWords+1, err)
	}
}

func TestMatches(t *testing.T) {
	text := "web-7d9f8c prod docker.io/library/nginx:1.25"
	for _, tc := range []struct {
		search string
		want   bool
	}{
		{"", true},
		{"nginx", true},
		{"NGI", true},
		{"ginx", false},
		{"web prod", true},
		{"web staging", false},
		{"nginx:1.2", true},
		{"7d9", true},
		{"library/nginx", true},
	} {
		q, err := Parse(tc.search)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Matches(func(fn func(string) bool) { Tokens(text, fn) }); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.search, text, got, tc.want)
		}
	}
}

func TestStoredText(t *testing.T) {
	raw := `{"metadata":{"name":"x","annotations":{"example.com/owner":"Team-A","n":3,"b":"tbd"}},` +
		`"spec":{"initContainers":[{"image":"busybox"}],"containers":[{"image":"nginx:1.25"},{"name":"skipped","image":null}],` +
		`"template":{"spec":{"containers":[{"image":"ghcr.io/app"}]}},"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"image":"cron-img"}]}}}}}}`
	var got []string
	StoredText(fieldpath.Doc{Raw: []byte(raw)}, func(tok string) bool { got = append(got, tok); return true })
	want := []string{"team", "a", "tbd", "nginx", "1", "25", "busybox", "ghcr", "io", "app", "cron", "img"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StoredText (-want +got):\n%s", diff)
	}
	// Starting at spec, as an object that knows where it begins does,
	// finds the same.
	got = nil
	StoredText(fieldpath.Members("c", []byte(raw)), func(tok string) bool { got = append(got, tok); return true })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StoredText from the members (-want +got):\n%s", diff)
	}
	n := 0
	if StoredText(fieldpath.Doc{Raw: []byte(raw)}, func(string) bool { n++; return n < 3 }) || n != 3 {
		t.Errorf("StoredText went on after false: %d calls", n)
	}
	if !StoredText(fieldpath.Doc{}, func(string) bool { return false }) || !StoredText(fieldpath.Doc{Raw: []byte("not json")}, func(string) bool { return false }) {
		t.Error("StoredText of no JSON found a token")
	}
}

func TestTree(t *testing.T) {
	tr := NewTree[int]()
	for i, tok := range []string{"redis", "redisinsight", "red", "nginx", "re"} {
		tr.Put(tok, i)
	}
	prefix := func(p string) []string {
		var out []string
		tr.Prefix(p, func(tok string, _ int) bool { out = append(out, tok); return true })
		return out
	}
	if diff := cmp.Diff([]string{"re", "red", "redis", "redisinsight"}, prefix("re")); diff != "" {
		t.Errorf("Prefix(re) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"redis", "redisinsight"}, prefix("redis")); diff != "" {
		t.Errorf("Prefix(redis) (-want +got):\n%s", diff)
	}
	if got := prefix("x"); got != nil {
		t.Errorf("Prefix(x) = %v", got)
	}
	tr.Delete("redis")
	if v, ok := tr.Get("redisinsight"); !ok || v != 1 {
		t.Errorf("Get(redisinsight) = %d, %v", v, ok)
	}
	if _, ok := tr.Get("redis"); ok || tr.Len() != 4 {
		t.Errorf("redis still there, or %d tokens", tr.Len())
	}
}

// TestEqual: queries of the same words are Equal, and go-cmp compares them
// by it.
func TestEqual(t *testing.T) {
	a, _ := Parse("Redis prod")
	b, _ := Parse("prod,redis re")
	c, _ := Parse("redis")
	if !a.Equal(b) || a.Equal(c) || !(Query{}).Equal(Query{}) {
		t.Errorf("Equal: %q %q %q", a, b, c)
	}
	if !cmp.Equal(struct{ Q Query }{a}, struct{ Q Query }{b}) {
		t.Error("go-cmp does not use Equal")
	}
}
