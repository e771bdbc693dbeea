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
// and then checks that no goroutine leaked. It does not return. A run that
// executes no test needs no cluster and starts none; see runsNoTest.
func Main(m *testing.M, opts Options, env **Env) {
	flag.Parse()
	if runsNoTest() {
		goleak.VerifyTestMain(m)
	}
	goleak.VerifyTestMain(withEnv{m: m, opts: opts, env: env})
}

// runsNoTest reports whether the test binary runs no test: it is a fuzzing
// worker (which runs only a fuzz target, and fuzz targets need no
// cluster), it only lists tests (-test.list), or it coordinates fuzzing
// with every test excluded (-test.run '^$' -test.fuzz …, as make fuzz
// runs it). Starting clusters would cost each of those seconds for nothing.
func runsNoTest() bool {
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return value("test.fuzzworker") == "true" || value("test.list") != "" ||
		(value("test.fuzz") != "" && value("test.run") == "^$")
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
