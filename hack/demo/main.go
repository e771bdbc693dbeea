// Command demo runs fleetcache on three local real clusters seeded with a
// small fleet, with a light churn, until interrupted: what "make demo" runs.
// It needs bin/kube-apiserver and bin/etcd ("make testbin") and runs from the
// module root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/internal/demo"
)

func main() {
	var opts demo.Options
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	fs.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "HTTP listen address of the aggregator")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "where to write the demo clusters' kubeconfig while it runs (default: a temporary file)")
	fs.StringVar(&opts.FleetKubeconfig, "fleet-kubeconfig", "", `the kubeconfig file where the "fleetcache" context for kubectl fleet is added while the demo runs (default: kubectl's, $KUBECONFIG or ~/.kube/config; "-" for none)`)
	fs.DurationVar(&opts.ChurnInterval, "churn-interval", 0, "pause between two churn changes (default 1s)")
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills the demo at once (its
	// servers die with it) instead of waiting for a clean stop.
	context.AfterFunc(ctx, stop)
	if err := demo.Run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
