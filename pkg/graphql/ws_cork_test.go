package graphql

import (
	"errors"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recordConn records the writes that reach it; it fails those after fail
// of them.
type recordConn struct {
	net.Conn
	writes []string
	fail   int
}

func (c *recordConn) Write(p []byte) (int, error) {
	if c.fail > 0 && len(c.writes) >= c.fail {
		return 1, errors.New("broken pipe")
	}
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

func TestCorkConn(t *testing.T) {
	type step struct {
		op string // "cork", "uncork", or the bytes to write
		// n and fails are Write's results.
		n     int
		fails bool
	}
	for _, tc := range []struct {
		name  string
		fail  int
		steps []step
		want  []string
	}{
		{name: "uncorked writes go through", steps: []step{{op: "a", n: 1}, {op: "bc", n: 2}}, want: []string{"a", "bc"}},
		{
			name:  "corked writes go with the first write after uncork",
			steps: []step{{op: "cork"}, {op: "a", n: 1}, {op: "bc", n: 2}, {op: "uncork"}, {op: "def", n: 3}, {op: "g", n: 1}},
			want:  []string{"abcdef", "g"},
		},
		{
			name:  "a cork without writes changes nothing",
			steps: []step{{op: "cork"}, {op: "uncork"}, {op: "a", n: 1}},
			want:  []string{"a"},
		},
		{
			name:  "corks one after the other",
			steps: []step{{op: "cork"}, {op: "a", n: 1}, {op: "uncork"}, {op: "b", n: 1}, {op: "cork"}, {op: "c", n: 1}, {op: "uncork"}, {op: "d", n: 1}},
			want:  []string{"ab", "cd"},
		},
		{
			name:  "a failed write counts only its own bytes",
			fail:  1,
			steps: []step{{op: "a", n: 1}, {op: "cork"}, {op: "bc", n: 2}, {op: "uncork"}, {op: "d", n: 0, fails: true}},
			want:  []string{"a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recordConn{fail: tc.fail}
			c := &corkConn{Conn: rc}
			for _, s := range tc.steps {
				switch s.op {
				case "cork":
					c.cork()
				case "uncork":
					c.uncork()
				default:
					n, err := c.Write([]byte(s.op))
					if n != s.n || (err != nil) != s.fails {
						t.Fatalf("Write(%q) = %d, %v; want %d, failed %t", s.op, n, err, s.n, s.fails)
					}
				}
			}
			if diff := cmp.Diff(tc.want, rc.writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if c.held != nil {
				t.Errorf("%d bytes still held", len(*c.held))
			}
		})
	}
}
