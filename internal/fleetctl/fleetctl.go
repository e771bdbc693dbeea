package fleetctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// usage is the help text.
const usage = `kubectl fleet: what runs where in every cluster, from fleetcache.

Usage:
  kubectl fleet get KIND [NAME] [-n NS | -A] [-l SELECTOR] [--field-selector SELECTOR]
                [--clusters a,b] [--cluster-selector SELECTOR] [--sort-by PATH]
                [-o wide|json|yaml|name|jsonpath=TEMPLATE|custom-columns=HEADER:PATH,...] [-w [--output-watch-events]]
  kubectl fleet clusters [-o wide|json|yaml]
  kubectl fleet count KIND [--by cluster|namespace|kind|label=KEY|cluster-label=KEY|field=PATH] [the filters of get]
  kubectl fleet changes [KIND] [--since 1h|TIME|CURSOR] [--until ...] [-o wide|json|yaml] [the filters of get]
  kubectl fleet kubeconfig [--write]   a context per cluster, fleet-<cluster>, and fleet, on fleetcache's Kubernetes API

The server and credentials come from the kubeconfig context named "fleetcache",
else the current context (--context picks another), or from --server and --token.

Flags:
`

// options are the parsed command line.
type options struct {
	connect connectOptions

	namespace       string
	allNamespaces   bool
	selector        string
	fieldSelector   string
	clusters        []string
	clusterSelector string
	sortBy          string
	output          string
	watch           bool
	watchOnly       bool
	watchEvents     bool
	by              string
	since, until    string
	requestTimeout  time.Duration
	chunkSize       int
	write           bool
}

func flagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubectl fleet", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&o.connect.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.connect.context, "context", "", `the kubeconfig context of fleetcache (default: "fleetcache" if it exists, else the current context)`)
	fs.StringVarP(&o.connect.server, "server", "s", "", "fleetcache's URL (https://fleetcache.example:8443); without --context, the kubeconfig is not read")
	fs.StringVar(&o.connect.token, "token", "", "bearer token for fleetcache")
	fs.StringVar(&o.connect.certificateAuthority, "certificate-authority", "", "path to a CA file for fleetcache's serving certificate")
	fs.BoolVar(&o.connect.insecure, "insecure-skip-tls-verify", false, "do not check fleetcache's serving certificate (insecure)")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 30*time.Second, "how long a query may take (not a watch); 0 for no limit")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "the namespace (default: the context's, else \"default\")")
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "every namespace")
	fs.StringVarP(&o.selector, "selector", "l", "", "label selector (app=web,tier in (fe,be))")
	fs.StringVar(&o.fieldSelector, "field-selector", "", "field selector on paths in the objects (status.phase!=Running, see fleetcache's docs/graphql.md)")
	fs.StringSliceVar(&o.clusters, "clusters", nil, "only these clusters (a,b)")
	fs.StringVar(&o.clusterSelector, "cluster-selector", "", "only the clusters whose labels match this selector (env=prod)")
	fs.StringVar(&o.sortBy, "sort-by", "", "sort by the value at this path (.metadata.creationTimestamp), done by the server")
	fs.StringVarP(&o.output, "output", "o", "", "wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,...")
	fs.BoolVarP(&o.watch, "watch", "w", false, "after listing, print each change (resumes after a disconnect)")
	fs.BoolVar(&o.watchOnly, "watch-only", false, "print the changes only, not the list first")
	fs.BoolVar(&o.watchEvents, "output-watch-events", false, "with --watch, print the event type (ADDED, MODIFIED, DELETED) first")
	fs.StringVar(&o.by, "by", "cluster", "count: cluster, namespace, kind, label=KEY, cluster-label=KEY or field=PATH")
	fs.StringVar(&o.since, "since", "1h", `changes: since when: a duration before now (1h, 15m), an RFC 3339 time or a revision cursor`)
	fs.StringVar(&o.until, "until", "", "changes: up to when, in the same forms (default: now)")
	fs.IntVar(&o.chunkSize, "chunk-size", 500, "objects per request")
	fs.BoolVar(&o.write, "write", false, "kubeconfig: add the contexts to the kubeconfig file (--kubeconfig, else $KUBECONFIG's first file or ~/.kube/config) rather than print them")
	return fs
}

// Main runs kubectl fleet with args (without the program name), writing to
// stdout and stderr, and returns the exit code: 0, 1 on failure, 2 on a
// usage error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flagSet(&o)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, usage+fs.FlagUsages())
			return 0
		}
		fmt.Fprintf(stderr, "error: %v\nSee 'kubectl fleet --help'.\n", err)
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage+fs.FlagUsages())
		return 2
	}
	var err error
	switch cmd, rest := rest[0], rest[1:]; cmd {
	case "get":
		err = runGet(ctx, &o, fs, rest, stdout, stderr)
	case "clusters":
		err = runClusters(ctx, &o, rest, stdout)
	case "count":
		err = runCount(ctx, &o, rest, stdout)
	case "changes":
		err = runChanges(ctx, &o, rest, stdout, stderr)
	case "kubeconfig":
		err = runKubeconfig(ctx, &o, rest, stdout)
	case "help":
		fmt.Fprint(stdout, usage+fs.FlagUsages())
		return 0
	default:
		err = usageError(fmt.Sprintf("unknown command %q: use get, clusters, count, changes or kubeconfig", cmd))
	}
	if err == nil || (errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		return 0
	}
	var se *Error
	if errors.As(err, &se) && se == err {
		fmt.Fprintln(stderr, err)
	} else {
		fmt.Fprintf(stderr, "error: %v\n", err)
	}
	var u usageError
	if errors.As(err, &u) {
		fmt.Fprintln(stderr, "See 'kubectl fleet --help'.")
		return 2
	}
	return 1
}

// usageError is a command line that makes no sense.
type usageError string

func (u usageError) Error() string { return string(u) }

// timeout bounds one query by --request-timeout.
func (o *options) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.requestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, o.requestTimeout)
}

// filter returns the ResourceFilter of the flags, for kind (a filter
// name: "Pod", "Deployment.apps"; "" for every kind) in the client's
// default namespace unless -n or -A say otherwise.
func (o *options) filter(c *Client, kind string) map[string]any {
	f := map[string]any{}
	if kind != "" {
		f["kinds"] = []string{kind}
	}
	if !o.allNamespaces {
		ns := o.namespace
		if ns == "" {
			ns = c.namespace
		}
		// "" keeps the cluster-scoped objects of a cluster-scoped kind:
		// kubectl ignores the namespace for those.
		f["namespaces"] = []string{ns, ""}
	}
	if o.selector != "" {
		f["labelSelector"] = o.selector
	}
	if o.fieldSelector != "" {
		f["fieldSelector"] = o.fieldSelector
	}
	if len(o.clusters) > 0 {
		f["clusters"] = o.clusters
	}
	if o.clusterSelector != "" {
		f["clusterSelector"] = o.clusterSelector
	}
	return f
}

// filterError explains a filter the server rejected. A server older than
// ResourceFilter.clusterSelector refuses --cluster-selector as a field it
// does not know.
func (o *options) filterError(err error) error {
	var e *Error
	if errors.As(err, &e) && o.clusterSelector != "" && strings.Contains(e.Message, "clusterSelector") && strings.Contains(e.Message, "Unknown field") {
		return fmt.Errorf("--cluster-selector: this fleetcache server does not support cluster selectors (ResourceFilter.clusterSelector): %w", err)
	}
	return err
}
