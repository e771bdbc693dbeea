package fleetctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// clusterStatus is a Cluster as `clusters` asks for it.
type clusterStatus struct {
	Name          string            `json:"name"`
	Status        string            `json:"status"`
	Stale         bool              `json:"stale"`
	CurrentAsOf   *time.Time        `json:"currentAsOf"`
	LastEventTime *time.Time        `json:"lastEventTime"`
	LastSyncTime  *time.Time        `json:"lastSyncTime"`
	ObjectCount   int               `json:"objectCount"`
	Message       *string           `json:"message"`
	Labels        map[string]string `json:"labels"`
	Resources     []struct {
		Resource    string     `json:"resource"`
		Status      string     `json:"status"`
		ObjectCount int        `json:"objectCount"`
		CurrentAsOf *time.Time `json:"currentAsOf"`
		LastError   *string    `json:"lastError"`
	} `json:"resources"`
}

const clustersQuery = `{ clusters { name status stale currentAsOf lastEventTime lastSyncTime objectCount message labels
  resources { resource status objectCount currentAsOf lastError } } }`

// runClusters prints every cluster's health: its status, how fresh its
// data is ("current", or "stale 4m" since it was last known current),
// objects, the last change's age and why it is not SYNCED; -o wide adds
// its labels and a line per resource type.
func runClusters(ctx context.Context, o *options, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError("clusters takes no arguments")
	}
	c, err := Connect(o.connect)
	if err != nil {
		return err
	}
	qctx, cancel := o.timeout(ctx)
	defer cancel()
	var got struct{ Clusters []clusterStatus }
	if err := c.Query(qctx, clustersQuery, nil, &got); err != nil {
		return err
	}
	switch o.output {
	case "json", "yaml":
		p := &objects{w: stdout, yaml: o.output == "yaml", listed: true}
		return p.print(map[string]any{"clusters": got.Clusters})
	case "", "wide":
	default:
		return usageError(fmt.Sprintf("clusters prints as a table (-o wide for each type), json or yaml, not %q", o.output))
	}
	return printClusters(stdout, got.Clusters, o.output == "wide", time.Now())
}

// printClusters prints the clusters' table. The free-text MESSAGE is the
// last column, so that the longest message pads nothing after it (LABELS
// comes before it with wide); each resource type's line leaves the LABELS
// cell empty.
func printClusters(w io.Writer, clusters []clusterStatus, wide bool, now time.Time) error {
	tw := newTabWriter(w)
	header := "CLUSTER\tSTATUS\tDATA\tOBJECTS\tLAST CHANGE"
	if wide {
		header += "\tLABELS"
	}
	fmt.Fprintln(tw, header+"\tMESSAGE")
	for _, cl := range clusters {
		msg := "<none>"
		if cl.Message != nil && *cl.Message != "" {
			msg = oneLine(*cl.Message)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s", cl.Name, cl.Status, freshness(cl.Status, cl.CurrentAsOf, now), cl.ObjectCount, ago(cl.LastEventTime, now))
		if wide {
			l := labels.FormatLabels(cl.Labels)
			fmt.Fprint(tw, "\t"+l)
		}
		fmt.Fprintln(tw, "\t"+msg)
		if !wide {
			continue
		}
		for _, r := range cl.Resources {
			msg := "<none>"
			if r.LastError != nil && *r.LastError != "" {
				msg = oneLine(*r.LastError)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t\t\t%s\n", r.Resource, r.Status, freshness(r.Status, r.CurrentAsOf, now), r.ObjectCount, msg)
		}
	}
	return tw.Flush()
}

// freshness says how current the data is: "current" while SYNCED, else
// "stale 4m" since it was last known current, "never synced" if it never
// was.
func freshness(status string, currentAsOf *time.Time, now time.Time) string {
	switch {
	case status == "SYNCED":
		return "current"
	case currentAsOf == nil:
		return "never synced"
	}
	return "stale " + duration.HumanDuration(now.Sub(*currentAsOf))
}

// ago is the age of t as kubectl prints ages, "<none>" for none.
func ago(t *time.Time, now time.Time) string {
	if t == nil {
		return "<none>"
	}
	return duration.HumanDuration(now.Sub(*t))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// runCount prints how many objects of the kind match the filters, by
// cluster, namespace, kind, a label's value, a cluster label's value or a
// path's value (facets).
func runCount(ctx context.Context, o *options, args []string, stdout io.Writer) error {
	if len(args) > 1 {
		return usageError("count takes at most a kind: kubectl fleet count pods --by namespace")
	}
	by, arg, header := strings.ToUpper(o.by), "", ""
	switch key, value, _ := strings.Cut(o.by, "="); key {
	case "cluster", "namespace", "kind":
		header = strings.ToUpper(key)
	case "label":
		by, arg, header = "LABEL", value, "LABEL "+value
	case "cluster-label":
		by, arg, header = "CLUSTER_LABEL", value, "CLUSTER LABEL "+value
	case "field":
		by, arg, header = "FIELD", value, strings.ToUpper(value)
	default:
		return usageError(fmt.Sprintf("--by %q: use cluster, namespace, kind, label=KEY, cluster-label=KEY or field=PATH", o.by))
	}
	if (by == "LABEL" || by == "CLUSTER_LABEL" || by == "FIELD") && arg == "" {
		return usageError(fmt.Sprintf("--by %s needs a value: label=KEY or field=PATH", o.by))
	}
	c, err := Connect(o.connect)
	if err != nil {
		return err
	}
	qctx, cancel := o.timeout(ctx)
	defer cancel()
	kind := ""
	if len(args) == 1 {
		k, err := resolveKind(qctx, c, args[0])
		if err != nil {
			return err
		}
		kind = k.filter
	}
	vars := map[string]any{"f": o.filter(c, kind), "by": by}
	switch by {
	case "LABEL", "CLUSTER_LABEL":
		vars["labelKey"] = arg
	case "FIELD":
		vars["field"] = arg
	}
	var got struct {
		Facets []struct {
			Value string `json:"value"`
			Count int    `json:"count"`
		} `json:"facets"`
	}
	q := `query($f: ResourceFilter, $by: FacetKey!, $labelKey: String, $field: String) {
  facets(filter: $f, by: $by, labelKey: $labelKey, field: $field) { value count } }`
	if err := c.Query(qctx, q, vars, &got); err != nil {
		return o.filterError(err)
	}
	switch o.output {
	case "json", "yaml":
		b, err := json.Marshal(got.Facets)
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		p := &objects{w: stdout, yaml: o.output == "yaml", listed: true}
		return p.print(v)
	case "":
	default:
		return usageError(fmt.Sprintf("count prints as a table, json or yaml, not %q", o.output))
	}
	tw := newTabWriter(stdout)
	fmt.Fprintf(tw, "%s\tCOUNT\n", header)
	for _, f := range got.Facets {
		v := f.Value
		if v == "" && by == "NAMESPACE" {
			v = "<cluster-scoped>"
		}
		fmt.Fprintf(tw, "%s\t%s\n", v, strconv.Itoa(f.Count))
	}
	return tw.Flush()
}
