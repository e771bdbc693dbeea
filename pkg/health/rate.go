package health

import (
	"sync/atomic"
	"time"
)

// rateWindow counts a cluster's object events in the last intervals of a
// fixed length, without a lock (the events of every type of the cluster
// count in it from the informers' goroutines). Slot i holds, in one word,
// the low 32 bits of the number of the interval it counts (its start in
// Unix nanoseconds divided by the length), above the count: the interval
// seen last whose number ≡ i mod len(slots). A slot holding an older
// interval counts zero, so no clearing is needed when events pause.
// Interval numbers wrap after 2^32 intervals, some 1,300 years of 10 s.
type rateWindow struct {
	interval time.Duration
	slots    []atomic.Uint64
}

func newRateWindow(interval time.Duration, n int) *rateWindow {
	w := &rateWindow{interval: interval, slots: make([]atomic.Uint64, n)}
	for i := range w.slots {
		w.slots[i].Store(slotWord(-1, 0))
	}
	return w
}

func slotWord(bucket int64, count uint32) uint64 { return uint64(uint32(bucket))<<32 | uint64(count) }

// add counts one event at time at.
func (w *rateWindow) add(at time.Time) {
	b := at.UnixNano() / int64(w.interval)
	s := &w.slots[b%int64(len(w.slots))]
	for {
		old := s.Load()
		next := slotWord(b, 1)
		if uint32(old>>32) == uint32(b) {
			next = old + 1
		}
		if s.CompareAndSwap(old, next) {
			return
		}
	}
}

// rates returns the events per second of the n complete intervals before
// the one that holds now, oldest first.
func (w *rateWindow) rates(now time.Time, n int) []float64 {
	out := make([]float64, n)
	cur := now.UnixNano() / int64(w.interval)
	for i := range n {
		b := cur - int64(n) + int64(i)
		if b < 0 {
			continue
		}
		if v := w.slots[b%int64(len(w.slots))].Load(); uint32(v>>32) == uint32(b) {
			out[i] = float64(uint32(v)) / w.interval.Seconds()
		}
	}
	return out
}
