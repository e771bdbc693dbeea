package health

import "time"

// rateWindow counts a cluster's object events in the last intervals of a
// fixed length: slot i holds the count of the interval whose number (its
// start in Unix nanoseconds divided by the length) is bucket, for the
// bucket ≡ i mod len(slots) seen last. A slot holding an older bucket
// counts zero, so no clearing is needed when events pause.
type rateWindow struct {
	slots []rateSlot
}

type rateSlot struct {
	bucket int64
	count  uint32
}

// addLocked counts one event at time at.
func (w *rateWindow) addLocked(at time.Time, interval time.Duration, n int) {
	if w.slots == nil {
		w.slots = make([]rateSlot, n)
		for i := range w.slots {
			w.slots[i].bucket = -1
		}
	}
	b := at.UnixNano() / int64(interval)
	s := &w.slots[b%int64(len(w.slots))]
	if s.bucket != b {
		s.bucket, s.count = b, 0
	}
	s.count++
}

// ratesLocked returns the events per second of the n complete intervals
// before the one that holds now, oldest first.
func (w *rateWindow) ratesLocked(now time.Time, interval time.Duration, n int) []float64 {
	out := make([]float64, n)
	if w.slots == nil {
		return out
	}
	cur := now.UnixNano() / int64(interval)
	for i := range n {
		b := cur - int64(n) + int64(i)
		if b < 0 {
			continue
		}
		if s := w.slots[b%int64(len(w.slots))]; s.bucket == b {
			out[i] = float64(s.count) / interval.Seconds()
		}
	}
	return out
}
