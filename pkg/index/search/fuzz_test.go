package search

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzTokens checks what a search's text and an object's text go through:
// every token is a non-empty run of lower-case letters and digits of at
// most MaxTokenLen bytes, found in the text in order (cut, lowercased);
// Parse's words are the text's tokens, each a word or beginning one, and
// its String parses back to itself; and a text always matches the query
// of its own tokens.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{"", "docker.io/library/nginx:1.25.3", "web-7d9f8c-abcde", "Team-A_Owner", "Größe=٣ café",
		strings.Repeat("x", 100), "İstanbul", "\xff\xfe a", "ǅ", "a\u0301b", "re redis redisinsight"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var toks []string
		Tokens(text, func(tok string) bool {
			toks = append(toks, tok)
			if tok == "" || len(tok) > MaxTokenLen || !utf8.ValidString(tok) {
				t.Fatalf("token %q of %q: empty, too long or not UTF-8", tok, text)
			}
			for _, c := range tok {
				if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
					t.Fatalf("token %q of %q holds %q", tok, text, c)
				}
			}
			if again := tokensOf(tok); len(again) != 1 || !strings.HasPrefix(tok, again[0]) {
				t.Fatalf("token %q of %q tokenizes to %q", tok, text, again)
			}
			return true
		})
		q, err := Parse(text)
		if err != nil {
			if len(toks) <= MaxWords {
				t.Fatalf("Parse(%q) with %d tokens: %v", text, len(toks), err)
			}
			return
		}
		for _, w := range q.Words() {
			if !containsPrefixed(toks, w) {
				t.Fatalf("word %q of %q begins none of its tokens %q", w, text, toks)
			}
		}
		again, err := Parse(q.String())
		if err != nil || again.String() != q.String() {
			t.Fatalf("Parse(%q) = %q, %v", q, again, err)
		}
		if !q.Matches(func(fn func(string) bool) { Tokens(text, fn) }) {
			t.Fatalf("%q does not match its own text", text)
		}
	})
}

func containsPrefixed(toks []string, w string) bool {
	for _, tok := range toks {
		if strings.HasPrefix(tok, w) {
			return true
		}
	}
	return false
}
