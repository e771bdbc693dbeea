package kubeapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// jsonStrings are strings whose escaping differs between encoders.
var jsonStrings = []string{
	"", "plain", "<none>", "a&b", `quote " and \ backslash`, "tab\tnew\nline\rcr\bback\fform",
	"\x00\x01\x1f\x7f", "é ☃ 😀", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate",
}

// TestAppendJSONString: appendJSONString writes what json.Marshal writes.
func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStrings {
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
