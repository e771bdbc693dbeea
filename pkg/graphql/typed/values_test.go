package typed

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestLeadingMember(t *testing.T) {
	for _, tc := range []struct {
		name, raw, key string
		want           string // the value found there, "" for none
	}{
		{"after strings", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"},"spec":{}}`, "metadata", `{"name":"a"}`},
		{"first", `{"metadata":{"name":"a"}}`, "metadata", `{"name":"a"}`},
		{"spaces", ` { "kind" : "Pod" , "metadata" : {"name":"a"} }`, "metadata", `{"name":"a"}`},
		{"after an object", `{"spec":{},"metadata":{"name":"a"}}`, "metadata", ""},
		{"after a number", `{"n":1,"metadata":{}}`, "metadata", ""},
		{"an escaped key", `{"k\"":"x","metadata":{}}`, "metadata", ""},
		{"absent", `{"kind":"Pod"}`, "metadata", ""},
		{"not an object", `["metadata"]`, "metadata", ""},
		{"cut", `{"kind":"Po`, "metadata", ""},
		{"empty", ``, "metadata", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := leadingMember(tc.raw, tc.key)
			got := ""
			if at > 0 {
				got = tc.raw[at : at+len(gjson.Get(tc.raw, tc.key).Raw)]
			}
			if got != tc.want {
				t.Errorf("found %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzLeadingMember checks that whatever the text, leadingMember finds
// what gjson finds, or nothing, and never panics.
func FuzzLeadingMember(f *testing.F) {
	f.Add(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}`)
	f.Add(`{"metadata":1}`)
	f.Add(`{"a":"b","metadata":[1,2]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		at := leadingMember(raw, "metadata")
		if at == 0 {
			return
		}
		if !gjson.Valid(raw) {
			return // gjson's answer on invalid JSON is no reference
		}
		want := gjson.Get(raw, "metadata")
		if !strings.HasPrefix(raw[at:], want.Raw) || want.Index != at && want.Index != 0 {
			t.Errorf("%q: found at %d, gjson has %q at %d", raw, at, want.Raw, want.Index)
		}
	})
}
