package informers_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// env is three real clusters (c1, c2, c3) shared by the tests of this package.
var env *testcluster.Env

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withEnv{m})
}

type withEnv struct{ m *testing.M }

func (w withEnv) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	env, err = testcluster.Start(ctx, testcluster.Options{Clusters: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	return w.m.Run()
}
