package fleetctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// change is a ResourceEvent of the changes query, as changes asks for it.
type change struct {
	Type     string     `json:"type"`
	Time     *time.Time `json:"time"`
	Cursor   string     `json:"cursor"`
	Resource struct {
		row
		ResourceVersion string `json:"resourceVersion"`
	} `json:"resource"`
}

// runChanges prints what changed among the objects of the kind (every kind
// without one) that match the filters of get, oldest first, a page at a
// time: when (LAST SEEN, as kubectl events prints it), the event, the
// cluster, the namespace with -A, and the object as kind/name.
func runChanges(ctx context.Context, o *options, args []string, stdout, stderr io.Writer) error {
	if len(args) > 1 {
		return usageError("changes takes at most a kind: kubectl fleet changes pods --since 1h")
	}
	if o.allNamespaces && o.namespace != "" {
		return usageError("-A and -n exclude each other")
	}
	switch o.output {
	case "", "wide", "json", "yaml":
	default:
		return usageError(fmt.Sprintf("changes prints as a table (-o wide adds the time and resourceVersion), json or yaml, not %q", o.output))
	}
	c, err := Connect(o.connect)
	if err != nil {
		return err
	}
	kind := kindRef{}
	if len(args) == 1 {
		qctx, cancel := o.timeout(ctx)
		kind, err = resolveKind(qctx, c, args[0])
		cancel()
		if err != nil {
			return err
		}
	}
	vars := map[string]any{"f": o.filter(c, kind.filter), "since": o.since, "first": o.chunkSize}
	if o.until != "" {
		vars["until"] = o.until
	}
	const q = `query($f: ResourceFilter, $since: String, $until: String, $first: Int, $after: String) {
  changes(filter: $f, since: $since, until: $until, first: $first, after: $after) {
    edges { type time cursor resource { cluster namespace name kind resource apiVersion resourceVersion } }
    pageInfo { hasNextPage endCursor }
    revision truncated
  }
}`
	var all []change
	for {
		var got struct {
			Changes struct {
				Edges    []change
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
				Revision  string
				Truncated bool
			}
		}
		qctx, cancel := o.timeout(ctx)
		err := c.Query(qctx, q, vars, &got)
		cancel()
		if err != nil {
			return o.filterError(err)
		}
		if _, ok := vars["until"]; !ok {
			// Later pages end where the first did.
			vars["until"] = got.Changes.Revision
			if got.Changes.Truncated {
				fmt.Fprintf(stderr, "Warning: fleetcache keeps fewer changes than --since %s asks for: older ones are not shown\n", o.since)
			}
		}
		for _, ch := range got.Changes.Edges {
			if kind.resource == "" || !kind.shared || ch.Resource.Resource == kind.resource {
				all = append(all, ch)
			}
		}
		if !got.Changes.PageInfo.HasNextPage {
			break
		}
		vars["after"] = got.Changes.PageInfo.EndCursor
	}
	switch o.output {
	case "json", "yaml":
		b, err := json.Marshal(map[string]any{"changes": all})
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		return (&objects{w: stdout, yaml: o.output == "yaml", listed: true}).print(v)
	}
	if len(all) == 0 {
		fmt.Fprintf(stderr, "No changes found since %s.\n", o.since)
		return nil
	}
	return printChanges(stdout, all, o.allNamespaces, o.output == "wide", time.Now())
}

// printChanges prints the changes' table.
func printChanges(w io.Writer, changes []change, namespaces, wide bool, now time.Time) error {
	tw := newTabWriter(w)
	header := "LAST SEEN\tCLUSTER"
	if namespaces {
		header += "\tNAMESPACE"
	}
	header += "\tEVENT\tOBJECT"
	if wide {
		header += "\tTIME\tRESOURCE VERSION"
	}
	fmt.Fprintln(tw, header)
	for _, ch := range changes {
		r := ch.Resource
		line := ago(ch.Time, now) + "\t" + r.Cluster
		if namespaces {
			ns := ""
			if r.Namespace != nil {
				ns = *r.Namespace
			}
			line += "\t" + ns
		}
		line += "\t" + ch.Type + "\t" + qualifiedKind(r.row) + "/" + r.Name
		if wide {
			t := "<none>"
			if ch.Time != nil {
				t = ch.Time.UTC().Format(time.RFC3339)
			}
			line += "\t" + t + "\t" + r.ResourceVersion
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
