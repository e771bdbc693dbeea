package index

import (
	"sync"
	"unsafe"
)

// recentShards and recentPerShard size the cache of recently decoded
// bodies: 256 objects, about 800 KB of JSON for 3 KB Pods.
const (
	recentShards   = 16
	recentPerShard = 16
)

// recentBodies keeps the JSON of the objects whose compressed body Raw
// decoded last, so that a page that reads several fields of each of its
// objects (Resource.field, columns, object) decodes each object once, not
// once per field. Scans inside the index decode into their own buffers
// (bodyReader) and do not pass through it, so they do not evict a page's
// objects. The JSON is shared: Raw's callers never modify it.
var recentBodies [recentShards]recentShard

// recentShard is one shard of recentBodies: a small ring, looked up by
// pointer.
type recentShard struct {
	mu   sync.Mutex
	objs [recentPerShard]*Object
	raws [recentPerShard][]byte
	next int
}

func recentShardOf(o *Object) *recentShard {
	// Objects are at least 192 bytes apart: skip the bits that are
	// always alike.
	return &recentBodies[(uintptr(unsafe.Pointer(o))>>8)%recentShards]
}

// recentRaw returns o's decoded JSON if it is in the cache.
func recentRaw(o *Object) ([]byte, bool) {
	s := recentShardOf(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.objs {
		if x == o {
			return s.raws[i], true
		}
	}
	return nil, false
}

// rememberRaw puts o's decoded JSON in the cache, in place of the oldest
// entry of its shard.
func rememberRaw(o *Object, raw []byte) {
	s := recentShardOf(o)
	s.mu.Lock()
	s.objs[s.next], s.raws[s.next] = o, raw
	s.next = (s.next + 1) % recentPerShard
	s.mu.Unlock()
}
