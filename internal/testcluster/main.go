package testcluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Shared is an Env that a package's tests share: the first test that asks
// for it (Env) starts it, and Main stops it after the last test. A test that
// needs no cluster never asks, and so never waits for one; a run of only
// such tests (or a fuzzing worker, or -list) starts none.
type Shared struct {
	opts Options

	once sync.Once
	env  *Env
	err  error
}

// NewShared returns a Shared that starts an Env with opts when first asked.
func NewShared(opts Options) *Shared { return &Shared{opts: opts} }

// Env returns the shared Env, started by the first call; a start that
// failed fails every test that asks. Under -short (make test-unit) it skips
// tb instead: the unit layer runs no API server.
func (s *Shared) Env(tb testing.TB) *Env {
	tb.Helper()
	SkipShort(tb, "real kube-apiservers")
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		begin := time.Now()
		s.env, s.err = Start(ctx, s.opts)
		if s.err == nil {
			fmt.Fprintf(os.Stderr, "testcluster: %d clusters ready in %s\n", len(s.env.Clusters()), time.Since(begin).Round(time.Millisecond))
		}
	})
	if s.err != nil {
		tb.Fatalf("start test clusters: %v", s.err)
	}
	return s.env
}

// stop stops the Env, if it was started.
func (s *Shared) stop() {
	if s.env != nil {
		s.env.Stop()
	}
}

// SkipShort skips tb under -short, saying that it needs what (real API
// servers, a browser, Node.js) and that make test runs it. Outside -short
// it does nothing: a test whose tool is missing then fails, never skips.
func SkipShort(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("needs %s: not in the unit layer (-short); make test runs it", what)
	}
}

// Main is the TestMain of a package whose tests share s: it runs the tests,
// stops s's Env if a test started it, and then checks that no goroutine
// leaked. It does not return.
func Main(m *testing.M, s *Shared) {
	goleak.VerifyTestMain(stopAfter{m: m, s: s})
}

// stopAfter runs the tests and then stops the Env, so that goleak checks
// after Stop.
type stopAfter struct {
	m *testing.M
	s *Shared
}

func (r stopAfter) Run() int {
	defer r.s.stop()
	return r.m.Run()
}
