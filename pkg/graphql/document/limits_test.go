package document

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxDepth int
		want     Limits
	}{
		{name: "below the introspection query", maxDepth: 12, want: Limits{Depth: 12, IntrospectionDepth: 16}},
		{name: "above it", maxDepth: 20, want: Limits{Depth: 20, IntrospectionDepth: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NewLimits(tc.maxDepth)); diff != "" {
				t.Errorf("NewLimits(%d) (-want +got):\n%s", tc.maxDepth, diff)
			}
		})
	}
}

func TestCheckText(t *testing.T) {
	l := NewLimits(12) // brackets may nest 2*16+32 = 64 deep
	for _, tc := range []struct {
		name  string
		query string
		err   string // a substring of the error, "" for none
	}{
		{name: "ordinary", query: `{ clusters { name } }`},
		{name: "at the limit", query: strings.Repeat("{", 64)},
		{name: "bracket bomb", query: strings.Repeat("{", 1<<20), err: "more than 64 levels deep; the query depth limit is 12"},
		{name: "list bomb", query: `{ resources(filter: {clusters: ` + strings.Repeat("[", 100) + `}) { totalCount } }`, err: "more than 64 levels"},
		{name: "brackets in a string", query: `{ a(b: "` + strings.Repeat("{", 100) + `") }`},
		{name: "brackets in a block string", query: `{ a(b: """` + strings.Repeat("{", 100) + `\""" """) }`},
		{name: "brackets in a comment", query: "# " + strings.Repeat("(", 100) + "\n{ a }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := l.CheckText(tc.query)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("CheckText = %v, want an error containing %q", err, tc.err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	l := NewLimits(5)
	for _, tc := range []struct {
		name   string
		query  string
		want   []string // the errors' messages
		syntax bool     // the first error wraps ErrSyntax
	}{
		{name: "within the limits", query: `{ resources { edges { node { name } } } }`},
		{name: "variable without type", query: `query($a:) { clusters { name } }`, want: []string{"syntax error: a variable definition lacks its type"}, syntax: true},
		{name: "too many selections", query: "{ clusters { " + strings.Repeat("name ", MaxSelections) + "} }", want: []string{"document has more than 2000 selections"}},
		{name: "fragment cycle", query: `{ resources { ...A } } fragment A on X { owners { ...B } } fragment B on X { children { ...A } }`,
			want: []string{`cannot spread fragment "A" within itself`}},
		{name: "fragment spreading itself", query: `{ r { ...R } } fragment R on X { name ...R }`, want: []string{`cannot spread fragment "R" within itself`}},
		{name: "too deep", query: `{ a { b { c { d { e { f } } } } } }`, want: []string{"query depth 6 exceeds the limit of 5"}},
		{name: "introspection within its own limit", query: `{ __schema { a { b { c { d { e { f } } } } } } }`},
		{name: "both too deep", query: `{ a { b { c { d { e { f } } } } } } ` +
			`{ __schema { ` + strings.Repeat("a { ", 16) + "x" + strings.Repeat(" }", 16) + ` } }`,
			want: []string{"query depth 6 exceeds the limit of 5", "introspection depth 18 exceeds the limit of 16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := l.Check(parse(t, tc.query))
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
			if tc.syntax && !errors.Is(errs[0], ErrSyntax) {
				t.Errorf("error %v does not wrap ErrSyntax", errs[0])
			}
		})
	}
}
