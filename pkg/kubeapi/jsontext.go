package kubeapi

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// This file writes the JSON of answers by appending to byte slices, for
// the paths that write a value per object (Table rows, metadata): no
// reflection, no copy of what is read.

// view returns the value at path in raw as gjson finds it, its Raw a view
// of raw's bytes (gjson.GetBytes copies it), valid as long as raw is.
func view(raw []byte, path string) gjson.Result {
	return gjson.Get(unsafe.String(unsafe.SliceData(raw), len(raw)), path)
}

// span returns where the value at path begins in raw and its bytes, and
// false when raw has none there (or gjson built it rather than found it).
func span(raw []byte, path string) (int, []byte, bool) {
	r := view(raw, path)
	if !r.Exists() || r.Index <= 0 || r.Index+len(r.Raw) > len(raw) {
		return 0, nil, false
	}
	return r.Index, raw[r.Index : r.Index+len(r.Raw)], true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped byte for byte as
// encoding/json escapes it (HTML characters as \u00XX, U+2028 and U+2029,
// invalid UTF-8 as \ufffd), so that answers do not change with the writer.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
