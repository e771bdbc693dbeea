// Command kubectl-fleet is `kubectl fleet`, the kubectl plugin on
// fleetcache's GraphQL API: `kubectl fleet get pods -A -o wide` prints the
// Pods of every cluster as kubectl prints one cluster's, with a CLUSTER
// column first. See docs/kubectl-fleet.md; the work is in internal/fleetctl.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/fleetcache/fleetcache/internal/fleetctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := fleetctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
