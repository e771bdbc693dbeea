package compact

import (
	"sync"
	"unsafe"
)

// recentShards and recentPerShard size a cache of recently decoded
// bodies: 256 bodies, about 800 KB of JSON for 3 KB Pods.
const (
	recentShards   = 16
	recentPerShard = 16
)

// recentBodies keeps the JSON of the bodies DecodeShared decoded last, so
// that a page that reads several fields of each of its objects decodes
// each object once, not once per field. A Codecs registry has one that
// all its Codecs share; a Codec made alone by NewCodec has its own. The
// JSON is shared: DecodeShared's callers never modify it.
type recentBodies [recentShards]recentShard

// recentShard is one shard of recentBodies: a small ring, looked up by
// the address of the body's bytes. It holds the bodies themselves, so
// that no other body can take their address while they are in it.
type recentShard struct {
	mu     sync.Mutex
	bodies [recentPerShard]Body
	raws   [recentPerShard][]byte
	next   int
}

func (r *recentBodies) shard(b Body) *recentShard {
	// Bodies are at least tens of bytes apart: skip the bits that are
	// always alike.
	return &r[(uintptr(unsafe.Pointer(unsafe.SliceData(b)))>>6)%recentShards]
}

// get returns b's decoded JSON if it is in the cache.
func (r *recentBodies) get(b Body) ([]byte, bool) {
	s := r.shard(b)
	p := unsafe.SliceData(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.bodies {
		if len(x) == len(b) && unsafe.SliceData(x) == p {
			return s.raws[i], true
		}
	}
	return nil, false
}

// put puts b's decoded JSON in the cache, in place of the oldest entry of
// its shard.
func (r *recentBodies) put(b Body, raw []byte) {
	s := r.shard(b)
	s.mu.Lock()
	s.bodies[s.next], s.raws[s.next] = b, raw
	s.next = (s.next + 1) % recentPerShard
	s.mu.Unlock()
}

// DecodeShared returns the JSON of b, a compressed body, decoded or, if
// b was among the last 256 bodies decoded by DecodeShared through this
// Codec's registry (or this Codec alone, made by NewCodec), as decoded
// then. The JSON is shared with other callers: it must not be modified.
func (c *Codec) DecodeShared(b Body) ([]byte, error) {
	if c == nil {
		return c.Decode(nil, b)
	}
	if raw, ok := c.recent.get(b); ok {
		return raw, nil
	}
	raw, err := c.Decode(nil, b)
	if err != nil {
		return nil, err
	}
	c.recent.put(b, raw)
	return raw, nil
}
