package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources' URIs.
const (
	clustersURI        = "fleetcache://clusters"
	clusterURITemplate = "fleetcache://clusters/{name}"
	clusterURIPrefix   = "fleetcache://clusters/"
)

// addResources adds the cluster list and each cluster's health, read with
// the caller's rights as cluster_health reads them.
func (s *Server) addResources() {
	s.sdk.AddResource(&mcpsdk.Resource{
		URI: clustersURI, Name: "clusters", Title: "Clusters and their health", MIMEType: "application/json",
		Description: "Every cluster fleetcache caches: its sync status (SYNCED or why not), labels, source and object count, as cluster_health returns them.",
	}, func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		cs, err := s.clusters(callerContext(ctx, req.Extra), "")
		if err != nil {
			return nil, err
		}
		return jsonContents(req.Params.URI, cs)
	})
	s.sdk.AddResourceTemplate(&mcpsdk.ResourceTemplate{
		URITemplate: clusterURITemplate, Name: "cluster", Title: "One cluster's health", MIMEType: "application/json",
		Description: "One cluster's sync status and, when it is not current, why: its message and the resource types that fail, with their last errors.",
	}, func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		name, ok := strings.CutPrefix(req.Params.URI, clusterURIPrefix)
		if !ok || name == "" || strings.Contains(name, "/") {
			return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
		}
		cs, err := s.clusters(callerContext(ctx, req.Extra), "")
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.Name == name {
				return jsonContents(req.Params.URI, c)
			}
		}
		return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
	})
}

// jsonContents is a resource's contents: v as indented JSON.
func jsonContents(uri string, v any) (*mcpsdk.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", uri, err)
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// addPrompts adds prompts that lead a model through the tools for the
// questions fleetcache is asked most.
func (s *Server) addPrompts() {
	s.sdk.AddPrompt(&mcpsdk.Prompt{
		Name: "why_not_running_everywhere", Title: "Why is this workload not running everywhere?",
		Description: "Investigate, cluster by cluster, why a workload (a Deployment, StatefulSet, DaemonSet...) is missing or not ready in some clusters.",
		Arguments: []*mcpsdk.PromptArgument{
			{Name: "kind", Description: `The workload's kind: "Deployment.apps", "StatefulSet.apps", "DaemonSet.apps".`, Required: true},
			{Name: "name", Description: "The workload's name.", Required: true},
			{Name: "namespace", Description: "Its namespace, if known."},
		},
	}, func(_ context.Context, req *mcpsdk.GetPromptRequest) (*mcpsdk.GetPromptResult, error) {
		a := req.Params.Arguments
		kind, name, ns := a["kind"], a["name"], a["namespace"]
		if kind == "" || name == "" {
			return nil, fmt.Errorf("kind and name are required")
		}
		where := ""
		if ns != "" {
			where = fmt.Sprintf(` in namespace %q (namespaces: [%q])`, ns, ns)
		}
		text := fmt.Sprintf(`Find out why the %s %q%s is not running in every cluster of the fleet, using fleetcache's tools.

1. Call cluster_health: note the clusters and any that are not SYNCED (their data is stale: say so rather than conclude from it).
2. Call count_resources with kinds [%q], nameContains %q and groupBy CLUSTER to see where it exists; the clusters missing from the groups do not have it (or you may not see it there).
3. Call get_table with the same filter and wide true to compare its columns (ready, up-to-date, available) across clusters.
4. For each cluster where it is missing or not ready: get_resource it to read status.conditions, then find its Pods with find_resources (kinds ["Pod"], the same namespace, a labelSelector from its spec.selector.matchLabels, fields ["status.phase", "status.containerStatuses[].state", "status.conditions"]) and get_table for their Status and Restarts.
5. Answer with one line per cluster: present or not, ready or not, and the most likely reason (image pull errors, crash loops, pending scheduling, missing ConfigMaps, a stale cluster), citing what you read.`, kind, name, where, kind, name)
		return &mcpsdk.GetPromptResult{
			Description: fmt.Sprintf("Why %s %s is not running everywhere", kind, name),
			Messages:    []*mcpsdk.PromptMessage{{Role: "user", Content: &mcpsdk.TextContent{Text: text}}},
		}, nil
	})
	s.sdk.AddPrompt(&mcpsdk.Prompt{
		Name: "whats_broken", Title: "What is broken in the fleet?",
		Description: "Survey the fleet for stale clusters, Pods that are not running and Pods that restart, optionally within a namespace or a set of clusters.",
		Arguments: []*mcpsdk.PromptArgument{
			{Name: "namespace", Description: "Limit the survey to this namespace."},
			{Name: "clusterSelector", Description: `Limit it to the clusters this label selector selects: "env=prod".`},
		},
	}, func(_ context.Context, req *mcpsdk.GetPromptRequest) (*mcpsdk.GetPromptResult, error) {
		a := req.Params.Arguments
		var scope []string
		if ns := a["namespace"]; ns != "" {
			scope = append(scope, fmt.Sprintf("namespaces [%q]", ns))
		}
		if sel := a["clusterSelector"]; sel != "" {
			scope = append(scope, fmt.Sprintf("clusterSelector %q", sel))
		}
		filter := "no other filter"
		if len(scope) > 0 {
			filter = strings.Join(scope, " and ")
		}
		text := fmt.Sprintf(`Survey what is broken in the fleet with fleetcache's tools; in every call below also use %s.

1. cluster_health with problemsOnly true: clusters that are not current, and why.
2. count_resources with kinds ["Pod"], fieldSelector "status.phase notin (Running,Succeeded)" and groupBy CLUSTER, then groupBy NAMESPACE: where Pods are not running.
3. get_table with the same filter: their Status (CrashLoopBackOff, ImagePullBackOff, Pending...) and Restarts.
4. count_resources with kinds ["Pod"] and fieldSelector "status.containerStatuses[].restartCount>5" grouped by NAMESPACE: Pods that keep restarting.
5. Report the problems by cluster and namespace, worst first, with the evidence and the stale clusters whose data may be old.`, filter)
		return &mcpsdk.GetPromptResult{
			Description: "What is broken in the fleet",
			Messages:    []*mcpsdk.PromptMessage{{Role: "user", Content: &mcpsdk.TextContent{Text: text}}},
		}, nil
	})
}
