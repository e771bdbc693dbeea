package testcluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Main is the TestMain of a package that tests against real clusters: it
// starts an Env with opts, stores it in *env, runs the tests, stops the Env
// and then checks that no goroutine leaked. It does not return. A fuzzing
// worker process runs only fuzz targets, which need no cluster: it starts none.
func Main(m *testing.M, opts Options, env **Env) {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		goleak.VerifyTestMain(m)
	}
	goleak.VerifyTestMain(withEnv{m: m, opts: opts, env: env})
}

// withEnv runs the tests between Start and Stop, so that goleak checks after Stop.
type withEnv struct {
	m    *testing.M
	opts Options
	env  **Env
}

func (w withEnv) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	e, err := Start(ctx, w.opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start test clusters:", err)
		return 1
	}
	defer e.Stop()
	fmt.Fprintf(os.Stderr, "testcluster: %d clusters ready in %s\n", len(e.Clusters()), time.Since(begin).Round(time.Millisecond))
	*w.env = e
	return w.m.Run()
}
