package ttlcache

import (
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[string, int](2, 10*time.Second, func() time.Time { return now })
	c.Add("a", 1)
	c.AddFor("b", 2, time.Second)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Errorf("a = %v %v, want 1", v, ok)
	}
	now = now.Add(time.Second)
	if _, ok := c.Get("b"); ok {
		t.Error("b outlived its own ttl")
	}
	if _, ok := c.Get("a"); !ok {
		t.Error("a expired before the cache's ttl")
	}
	c.Add("c", 3)
	c.Add("d", 4) // pushes out the least recently used
	if c.Len() != 2 {
		t.Errorf("Len = %d, want the bound 2", c.Len())
	}
	now = now.Add(10 * time.Second)
	if _, ok := c.Get("d"); ok {
		t.Error("d outlived the cache's ttl")
	}
}
