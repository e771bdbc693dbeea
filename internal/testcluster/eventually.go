package testcluster

import (
	"testing"
	"time"
)

// Eventually polls cond every 50ms until it holds, and fails the test if it
// does not within timeout. cond returns whether it holds and a description
// of the state it saw, which the failure message quotes.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
