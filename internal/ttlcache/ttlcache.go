// Package ttlcache is a bounded LRU cache whose entries expire: the cache of
// token reviews and of access decisions.
//
// It is built on golang-lru/v2's plain LRU with expiry checked on read,
// rather than on golang-lru/v2's expirable package, whose cleanup goroutine
// can never be stopped (v2.0.7): fleetcache owns and awaits every goroutine
// it starts. An expired entry costs its slot until it is read or pushed out,
// which the size bound already accounts for.
package ttlcache

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache maps keys to values for a time. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	lru *lru.Cache[K, entry[V]]
	ttl time.Duration
	now func() time.Time
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// New returns a Cache of at most size entries (at least 1), each kept for
// ttl unless added with AddFor. now is the clock (nil: time.Now).
func New[K comparable, V any](size int, ttl time.Duration, now func() time.Time) *Cache[K, V] {
	if now == nil {
		now = time.Now
	}
	c, err := lru.New[K, entry[V]](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Cache[K, V]{lru: c, ttl: ttl, now: now}
}

// Get returns the value of key if it is present and has not expired.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	v, _, ok := c.GetTTL(key)
	return v, ok
}

// GetTTL is Get that also returns how long the value has left.
func (c *Cache[K, V]) GetTTL(key K) (V, time.Duration, bool) {
	e, ok := c.lru.Get(key)
	if !ok {
		var zero V
		return zero, 0, false
	}
	left := e.expires.Sub(c.now())
	if left <= 0 {
		var zero V
		return zero, 0, false
	}
	return e.value, left, true
}

// Add keeps value for key for the cache's ttl.
func (c *Cache[K, V]) Add(key K, value V) { c.AddFor(key, value, c.ttl) }

// AddFor keeps value for key for ttl.
func (c *Cache[K, V]) AddFor(key K, value V, ttl time.Duration) {
	c.lru.Add(key, entry[V]{value: value, expires: c.now().Add(ttl)})
}

// Len returns the number of entries, expired ones included.
func (c *Cache[K, V]) Len() int { return c.lru.Len() }
