// Command aggregator runs fleetcache: it caches the clusters of its sources
// (kubeconfig files, a kubeconfig directory, cluster Secrets) and serves the
// GraphQL API, health, metrics and a status page over them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/internal/app"
)

func main() {
	cfg, err := app.ParseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		err = app.SetupLogging(cfg.Log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "aggregator: invalid configuration:", err)
		os.Exit(2)
	}
	for _, warning := range cfg.Deprecated() {
		klog.Background().Info("WARNING: deprecated setting", "detail", warning)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg.Options()); err != nil {
		fmt.Fprintln(os.Stderr, "aggregator:", err)
		os.Exit(1)
	}
}
