// Command aggregator runs fleetcache: it caches the clusters of a kubeconfig
// and serves the GraphQL API over them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/aggregator"
)

func main() {
	var opts aggregator.Options
	var contexts, resources string
	fs := flag.NewFlagSet("aggregator", flag.ExitOnError)
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig file whose contexts are the clusters (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&contexts, "contexts", "", "comma-separated contexts to register (default all)")
	fs.StringVar(&resources, "resources", "", "comma-separated resource types, kubectl names such as pods,deployments.apps (default: the built-in set)")
	fs.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "HTTP listen address")
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])
	opts.Contexts = splitList(contexts)
	opts.Informers.Resources = splitList(resources)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := aggregator.Run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "aggregator:", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
