// Package changelog is a bounded, numbered log of changes that followers read
// from a version and wait on. The index's change feed and the health
// tracker's status changes are both one.
package changelog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrExpired means entries after the requested version are no longer retained.
var ErrExpired = errors.New("no longer retained")

// ErrFuture means the requested version is ahead of the log.
var ErrFuture = errors.New("version is ahead of the log")

// Log keeps the newest entries, numbered 1, 2, 3, … in append order. An
// owner that must publish its state and its version together appends while
// holding its own write lock and reads Version under its read lock. Log is
// safe for concurrent use.
type Log[T any] struct {
	version atomic.Uint64 // number of the last entry; read without mu

	mu     sync.Mutex
	buf    []T // ring of the newest entries
	start  int // position in buf of the oldest entry
	n      int // how many entries buf holds
	max    int
	waitCh chan struct{} // when not nil, closed by the next Append
}

// New returns a Log that keeps the newest retention entries (at least 1).
func New[T any](retention int) *Log[T] {
	return &Log[T]{max: max(retention, 1)}
}

// Version returns the number of the last entry; 0 when none.
func (l *Log[T]) Version() uint64 { return l.version.Load() }

// Append adds v as entry Version()+1 and wakes the goroutines in Wait.
func (l *Log[T]) Append(v T) {
	l.mu.Lock()
	switch {
	case l.n < len(l.buf):
		l.buf[(l.start+l.n)%len(l.buf)] = v
		l.n++
	case len(l.buf) < l.max:
		// Grow as append would, but never past max.
		grown := make([]T, min(max(2*len(l.buf), 64), l.max))
		for i := range l.n {
			grown[i] = l.buf[(l.start+i)%len(l.buf)]
		}
		l.buf, l.start = grown, 0
		l.buf[l.n] = v
		l.n++
	default:
		l.buf[l.start] = v
		if l.start++; l.start == len(l.buf) {
			l.start = 0
		}
	}
	l.version.Add(1)
	ch := l.waitCh
	l.waitCh = nil
	l.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// TrimWhile drops the oldest entries as long as drop returns true for the
// oldest one (entries that outlived an age limit), and returns how many it
// dropped. Reading from before them is then ErrExpired. drop is called with
// the log's lock held: it must not call the log.
func (l *Log[T]) TrimWhile(drop func(T) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var zero T
	dropped := 0
	for l.n > 0 && drop(l.buf[l.start]) {
		l.buf[l.start] = zero // let it be collected
		if l.start++; l.start == len(l.buf) {
			l.start = 0
		}
		l.n--
		dropped++
	}
	return dropped
}

// Oldest returns the number of the oldest retained entry; Version()+1 when
// none is retained.
func (l *Log[T]) Oldest() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version.Load() - uint64(l.n) + 1
}

// Search returns the number of the first retained entry for which after
// returns true, where after is false for the older entries and true from
// some entry on (entries appended in order of a time, say); Version()+1
// when it is true for none. It is a binary search, with the log's lock
// held: after must not call the log.
func (l *Log[T]) Search(after func(T) bool) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	lo, hi := 0, l.n // the answer is in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if after(l.buf[(l.start+mid)%len(l.buf)]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return l.version.Load() - uint64(l.n) + 1 + uint64(lo)
}

// Since returns the entries after version after, oldest first, at most limit
// of them (limit <= 0: all). It returns nothing when there is nothing new, an
// error wrapping ErrFuture when after is ahead of the log, and one wrapping
// ErrExpired when an entry after after was already dropped.
func (l *Log[T]) Since(after uint64, limit int) ([]T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.version.Load()
	if after > last {
		return nil, fmt.Errorf("after version %d: log is at version %d: %w", after, last, ErrFuture)
	}
	if after == last {
		return nil, nil
	}
	oldest := last - uint64(l.n) + 1
	if after+1 < oldest {
		return nil, fmt.Errorf("after version %d: oldest retained version is %d: %w", after, oldest, ErrExpired)
	}
	n := last - after
	if limit > 0 && n > uint64(limit) {
		n = uint64(limit)
	}
	out := make([]T, n)
	first := l.start + int(after+1-oldest)
	for i := range out {
		out[i] = l.buf[(first+i)%len(l.buf)]
	}
	return out, nil
}

// Wait returns nil as soon as Version() > after, or ctx.Err() if ctx ends
// first.
func (l *Log[T]) Wait(ctx context.Context, after uint64) error {
	for {
		if l.version.Load() > after {
			return nil
		}
		l.mu.Lock()
		if l.version.Load() > after {
			l.mu.Unlock()
			return nil
		}
		if l.waitCh == nil {
			l.waitCh = make(chan struct{})
		}
		ch := l.waitCh
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			if l.version.Load() > after {
				return nil
			}
			return ctx.Err()
		}
	}
}
