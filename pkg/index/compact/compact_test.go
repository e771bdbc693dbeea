package compact

import (
	"bytes"
	"fmt"
	"math"
	"sync"
	"testing"
)

// pod returns the JSON of a Pod-like object i: keys and most values
// repeat from object to object, as in a real cluster.
func pod(i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-%d","namespace":"ns-%d","uid":"%08x-0000-4000-8000-%012x",`+
		`"labels":{"app":"web","tier":"fe"}},"spec":{"containers":[{"name":"main","image":"nginx:1.%d","resources":{"limits":{"cpu":"500m"}}}],`+
		`"nodeName":"node-%d","restartPolicy":"Always"},"status":{"phase":"Running","podIP":"10.0.%d.%d","startTime":"2026-01-01T00:00:%02dZ"}}`,
		i, i%7, i*7919, i, i%30, i%50, i/256%256, i%256, i%60)
}

func TestRoundTrip(t *testing.T) {
	c := NewCodec("pods", 0)
	var bodies []Body
	var raws [][]byte
	for i := 0; !c.Trained() || i < 2000; i++ {
		raw := pod(i)
		raws = append(raws, raw)
		bodies = append(bodies, c.Encode(raw))
	}
	compressed, stored, plain := 0, 0, 0
	for i, b := range bodies {
		got, err := c.Decode(nil, b)
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		if !bytes.Equal(got, raws[i]) {
			t.Fatalf("body %d decodes to\n%s\nwant\n%s", i, got, raws[i])
		}
		if b.Compressed() {
			compressed++
			stored += len(b)
			plain += len(raws[i])
		} else if view, ok := View(b); !ok || !bytes.Equal(view, raws[i]) {
			t.Fatalf("plain body %d: View = %q, %t", i, view, ok)
		}
	}
	if compressed < 1000 {
		t.Fatalf("only %d of %d bodies compressed", compressed, len(bodies))
	}
	if ratio := float64(stored) / float64(plain); ratio > 0.35 {
		t.Errorf("compressed bodies are %.2f of the JSON, want at most 0.35", ratio)
	}
	t.Logf("%d bodies before training, then %.0f B per body for %.0f B of JSON", len(bodies)-compressed,
		float64(stored)/float64(compressed), float64(plain)/float64(compressed))
}

func TestPlainBodies(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		copy bool
	}{
		{"empty", nil, false},
		{"json", []byte(`{"a":1}`), false},
		{"begins with the compressed marker", []byte{s2Dict, 'x'}, true},
		{"begins with the escape marker", []byte{escaped, 'x'}, true},
		{"begins with the dropped marker", []byte{dropped}, true},
		{"begins with the parts marker", []byte{s2Parts, 'x'}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *Codec // no codec: plain bodies
			b := c.Encode(tt.raw)
			if b.Compressed() {
				t.Fatal("a nil Codec compressed")
			}
			view, ok := View(b)
			if !ok || !bytes.Equal(view, tt.raw) {
				t.Fatalf("View = %q, %t; want %q", view, ok, tt.raw)
			}
			if got, err := c.Decode([]byte("prefix"), b); err != nil || string(got) != "prefix"+string(tt.raw) {
				t.Fatalf("Decode = %q, %v", got, err)
			}
			if len(tt.raw) == 0 {
				return
			}
			if shared := &b[0] == &tt.raw[0]; shared == tt.copy {
				t.Errorf("body shares the JSON's bytes: %t, want %t", shared, !tt.copy)
			}
		})
	}
}

// TestParts stores bodies in two parts at every kind of split and reads
// them back whole, and their second part alone.
func TestParts(t *testing.T) {
	c := NewCodec("pods", 0)
	for i := 0; !c.Trained(); i++ {
		c.Encode(pod(i))
	}
	raw := pod(4242)
	status := bytes.Index(raw, []byte(`"status":`)) + len(`"status":`)
	for _, at := range []int{-1, 0, 1, status, len(raw) - 1, len(raw), len(raw) + 5} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			b := c.EncodeParts(raw, at)
			if !b.Compressed() {
				t.Fatal("not compressed")
			}
			got, err := c.Decode([]byte("prefix"), b)
			if err != nil || string(got) != "prefix"+string(raw) {
				t.Fatalf("Decode = %q, %v", got, err)
			}
			split := at > 0 && at < len(raw)
			if want := map[bool]int{true: at}[split]; b.Split() != want {
				t.Fatalf("Split = %d, want %d", b.Split(), want)
			}
			second, err := c.DecodeSecond([]byte("prefix"), b)
			switch {
			case !split && err == nil:
				t.Fatal("DecodeSecond of a body in one part did not fail")
			case split && (err != nil || string(second) != "prefix"+string(raw[at:])):
				t.Fatalf("DecodeSecond = %q, %v; want %q", second, err, raw[at:])
			}
		})
	}
	one, parts := c.Encode(raw), c.EncodeParts(raw, status)
	t.Logf("%d B of JSON: %d B in one part, %d B in two", len(raw), len(one), len(parts))
	// Truncated anywhere, a body in parts fails to decode; it never panics.
	for n := 1; n < len(parts); n++ {
		if _, err := c.Decode(nil, parts[:n]); err == nil {
			t.Fatalf("a body cut to %d of %d bytes decoded", n, len(parts))
		}
		c.DecodeSecond(nil, parts[:n])
		Body(parts[:n]).Split()
	}
}

func TestCorrupt(t *testing.T) {
	c := NewCodec("pods", 0)
	if _, err := c.Decode(nil, Body{s2Dict, 1, 2, 3}); err == nil {
		t.Error("a compressed body decoded before training")
	}
	for i := 0; !c.Trained(); i++ {
		c.Encode(pod(i))
	}
	b := c.Encode(pod(1))
	if !b.Compressed() {
		t.Fatal("not compressed after training")
	}
	if _, err := c.Decode(nil, b[:len(b)/2]); err == nil {
		t.Error("a truncated body decoded")
	}
	var none *Codec
	if _, err := none.Decode(nil, b); err == nil {
		t.Error("a compressed body decoded without its Codec")
	}
}

// TestConcurrent encodes and decodes from many goroutines across training.
func TestConcurrent(t *testing.T) {
	var cs Codecs
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			c := cs.For("pods")
			for i := range 500 {
				raw := pod(g*1000 + i)
				got, err := c.Decode(nil, c.Encode(raw))
				if err != nil || !bytes.Equal(got, raw) {
					t.Errorf("round trip of %d: %v", g*1000+i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if pods, again, nodes := cs.For("pods"), cs.For("pods"), cs.For("nodes"); pods != again || pods == nodes {
		t.Error("Codecs.For does not give one Codec per resource")
	}
}

func FuzzRoundTrip(f *testing.F) {
	c := NewCodec("pods", 0)
	for i := 0; !c.Trained(); i++ {
		c.Encode(pod(i))
	}
	f.Add(pod(5))
	f.Add([]byte{})
	f.Add([]byte{s2Dict})
	f.Add(append(pod(7), pod(8)...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := c.Encode(raw)
		got, err := c.Decode(nil, b)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
		// In two parts, as objects are stored.
		at := len(raw) / 3
		b = c.EncodeParts(raw, at)
		if got, err = c.Decode(nil, b); err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("round trip in parts at %d: %q, %v", at, got, err)
		}
		if b.Compressed() && b.Split() == at {
			if got, err = c.DecodeSecond(nil, b); err != nil || !bytes.Equal(got, raw[at:]) {
				t.Fatalf("second part from %d: %q, %v", at, got, err)
			}
		}
		// Decoding arbitrary bytes never panics.
		_, _ = c.Decode(nil, Body(raw))
	})
}

func BenchmarkDecode(b *testing.B) {
	c := NewCodec("pods", 0)
	for i := 0; !c.Trained(); i++ {
		c.Encode(pod(i))
	}
	body := c.Encode(pod(123456))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = c.Decode(buf[:0], body)
	}
	b.ReportMetric(float64(len(body)), "stored-B")
	b.ReportMetric(float64(len(buf)), "json-B")
}

// TestEncoderBase checks blocks encoded by one encoder while its base
// passes the end of its 32 bits: the table is cleared, and entries of
// earlier blocks are never taken for the block's own.
func TestEncoderBase(t *testing.T) {
	c := NewCodec("pods", 0)
	for i := 0; !c.Trained(); i++ {
		c.Encode(pod(i))
	}
	d := c.dict.Load()
	e := &encoder{base: math.MaxUint32 - 3000}
	wrapped := false
	for i := range 200 {
		raw := pod(i)
		before := e.base
		block := e.encode(nil, raw, d)
		wrapped = wrapped || e.base < before
		got, err := d.Decode(nil, block)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("pod %d, base %d: decodes to %q, %v", i, before, got, err)
		}
	}
	if !wrapped {
		t.Fatal("the base did not wrap: the test covers nothing")
	}
}
