package fleetctl

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ContextPrefix begins the name of each cluster's context that `kubectl
// fleet kubeconfig` writes: fleet-<cluster>.
const ContextPrefix = "fleet-"

// FleetContext is the context that `kubectl fleet kubeconfig` writes for
// the fleet's API (/fleet: lists across clusters).
const FleetContext = "fleet"

// clusterNamesQuery lists the fleet's clusters.
const clusterNamesQuery = `{ clusters { name } }`

// runKubeconfig prints, or with --write adds to the kubeconfig file, a
// context per cluster of the fleet, fleet-<cluster>, whose server is
// fleetcache's Kubernetes API of that cluster (/clusters/<cluster>, see
// docs/kubernetes-api.md), and the context fleet on the fleet's API
// (/fleet), with fleetcache's certificate authority and the credentials
// kubectl fleet uses.
func runKubeconfig(ctx context.Context, o *options, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError("kubeconfig takes no arguments")
	}
	src, err := fleetcacheEntry(o.connect)
	if err != nil {
		return err
	}
	c, err := Connect(o.connect)
	if err != nil {
		return err
	}
	qctx, cancel := o.timeout(ctx)
	defer cancel()
	var got struct{ Clusters []struct{ Name string } }
	if err := c.Query(qctx, clusterNamesQuery, nil, &got); err != nil {
		return err
	}
	out := clientcmdapi.NewConfig()
	out.AuthInfos[src.userName] = src.user
	var names []string
	for _, cl := range got.Clusters {
		name := ContextPrefix + cl.Name
		entry := src.cluster.DeepCopy()
		entry.Server = strings.TrimSuffix(src.cluster.Server, "/") + "/clusters/" + url.PathEscape(cl.Name)
		entry.LocationOfOrigin = ""
		out.Clusters[name] = entry
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: src.userName, Namespace: src.namespace}
		names = append(names, name)
	}
	// The fleet's API (lists across clusters): the context "fleet".
	fleet := src.cluster.DeepCopy()
	fleet.Server = strings.TrimSuffix(src.cluster.Server, "/") + "/fleet"
	fleet.LocationOfOrigin = ""
	out.Clusters[FleetContext] = fleet
	out.Contexts[FleetContext] = &clientcmdapi.Context{Cluster: FleetContext, AuthInfo: src.userName, Namespace: src.namespace}
	names = append(names, FleetContext)
	slices.Sort(names)
	if !o.write {
		data, err := clientcmd.Write(*out)
		if err != nil {
			return fmt.Errorf("encode kubeconfig: %w", err)
		}
		_, err = stdout.Write(data)
		return err
	}
	file := o.connect.kubeconfig
	if file == "" {
		file = clientcmd.NewDefaultClientConfigLoadingRules().GetDefaultFilename()
	}
	cfg, err := clientcmd.LoadFromFile(file)
	if err != nil {
		cfg = clientcmdapi.NewConfig()
	}
	for name := range out.Clusters {
		cfg.Clusters[name] = out.Clusters[name]
		cfg.Contexts[name] = out.Contexts[name]
	}
	if _, ok := cfg.AuthInfos[src.userName]; !ok || src.synthesized {
		cfg.AuthInfos[src.userName] = src.user
	}
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	for _, name := range names {
		fmt.Fprintf(stdout, "Context %q written to %s\n", name, file)
	}
	return nil
}

// entry is where kubectl fleet reaches fleetcache, as kubeconfig entries.
type entry struct {
	cluster   *clientcmdapi.Cluster
	user      *clientcmdapi.AuthInfo
	userName  string
	namespace string
	// synthesized is set when the user comes from --token rather than
	// from the kubeconfig.
	synthesized bool
}

// fleetcacheEntry returns the kubeconfig entries Connect uses: those of the
// context it picks, with --server, --token and --certificate-authority
// applied, or those flags alone.
func fleetcacheEntry(o connectOptions) (entry, error) {
	e := entry{cluster: clientcmdapi.NewCluster(), user: clientcmdapi.NewAuthInfo(), userName: DefaultContext}
	if o.server == "" || o.context != "" {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.kubeconfig
		raw, err := rules.Load()
		if err != nil {
			return e, fmt.Errorf("load kubeconfig: %w", err)
		}
		name := contextName(raw, o.context)
		ctx, ok := raw.Contexts[name]
		if !ok || raw.Clusters[ctx.Cluster] == nil {
			return e, fmt.Errorf("no fleetcache server: the kubeconfig has no context %q with a cluster", name)
		}
		e.cluster = raw.Clusters[ctx.Cluster].DeepCopy()
		e.namespace = ctx.Namespace
		if u := raw.AuthInfos[ctx.AuthInfo]; u != nil {
			e.user, e.userName = u.DeepCopy(), ctx.AuthInfo
		}
	}
	if o.server != "" {
		e.cluster.Server = o.server
	}
	if o.certificateAuthority != "" {
		e.cluster.CertificateAuthority, e.cluster.CertificateAuthorityData = o.certificateAuthority, nil
	}
	if o.insecure {
		e.cluster.InsecureSkipTLSVerify = true
	}
	if o.token != "" {
		e.user = &clientcmdapi.AuthInfo{Token: o.token}
		e.userName, e.synthesized = ContextPrefix+"token", true
	}
	e.user.LocationOfOrigin = ""
	return e, nil
}
