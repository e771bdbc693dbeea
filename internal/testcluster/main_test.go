package testcluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// env is shared by the tests of this package: two clusters, c1 and c2.
var env *Env

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withEnv{m})
}

// withEnv runs the tests between Start and Stop, so that goleak checks after Stop.
type withEnv struct{ m *testing.M }

func (w withEnv) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	var err error
	env, err = Start(ctx, Options{Clusters: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start test clusters:", err)
		return 1
	}
	defer env.Stop()
	fmt.Fprintf(os.Stderr, "testcluster: 2 clusters ready in %s\n", time.Since(begin).Round(time.Millisecond))
	return w.m.Run()
}
