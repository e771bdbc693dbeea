package graphql

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/graphql-go/graphql"
	"github.com/graphql-go/graphql/language/parser"
	"github.com/graphql-go/graphql/language/source"
)

// graphqlBlock is a fenced block of GraphQL in Markdown.
var graphqlBlock = regexp.MustCompile("(?ms)^```graphql\n(.*?)^```")

// TestDocumentedQueries checks that every GraphQL block of the README and
// docs/ is a document the served schema validates, so that each can be
// pasted into a client as it is (one anonymous operation at most, no
// field the schema lacks).
func TestDocumentedQueries(t *testing.T) {
	// Pods are typed, as a fleet's are (docs/graphql.md, "Typed kinds"),
	// and the kinds of the relations the docs show.
	snap := *podKinds(t).(staticKinds).snap
	for _, k := range []string{"Node", "Service", "ConfigMap", "Secret", "Event", "Deployment", "ReplicaSet"} {
		snap.Kinds = append(slices.Clip(snap.Kinds), relKinds[k].openapiKind(t))
	}
	s := newServer(t, newFixture(t).ix, newFixture(t).tracker, Options{Kinds: staticKinds{&snap}})
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, name := range append(files, "../../README.md") {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range graphqlBlock.FindAllSubmatchIndex(text, -1) {
			blocks++
			line := 1 + strings.Count(string(text[:m[0]]), "\n")
			query := string(text[m[2]:m[3]])
			doc, err := parser.Parse(parser.ParseParams{Source: source.NewSource(&source.Source{Body: []byte(query)})})
			if err != nil {
				t.Errorf("%s:%d: %v", filepath.Base(name), line, err)
				continue
			}
			if errs := s.limits.Check(doc); len(errs) > 0 {
				t.Errorf("%s:%d: %v", filepath.Base(name), line, errs)
			}
			if v := graphql.ValidateDocument(&s.gen.Load().schema, doc, nil); !v.IsValid {
				t.Errorf("%s:%d: %v", filepath.Base(name), line, v.Errors)
			}
		}
	}
	if blocks < 10 {
		t.Fatalf("found %d GraphQL blocks in the docs: the pattern no longer finds them", blocks)
	}
}

// exampleQuery is a query of GraphiQL's example tabs in examples.js.
var exampleQuery = regexp.MustCompile("(?s)query: `(.*?)`")

// TestGraphiQLExamples checks that every example tab GraphiQL opens with
// is a document the served schema validates.
func TestGraphiQLExamples(t *testing.T) {
	s := newServer(t, newFixture(t).ix, newFixture(t).tracker, Options{})
	text, err := os.ReadFile("../../internal/graphiql/ui/src/examples.js")
	if err != nil {
		t.Fatal(err)
	}
	found := exampleQuery.FindAllSubmatch(text, -1)
	if len(found) < 5 {
		t.Fatalf("found %d example queries: the pattern no longer finds them", len(found))
	}
	for _, m := range found {
		doc, err := parser.Parse(parser.ParseParams{Source: source.NewSource(&source.Source{Body: m[1]})})
		if err != nil {
			t.Errorf("%v:\n%s", err, m[1])
			continue
		}
		if v := graphql.ValidateDocument(&s.gen.Load().schema, doc, nil); !v.IsValid {
			t.Errorf("%v:\n%s", v.Errors, m[1])
		}
	}
}
