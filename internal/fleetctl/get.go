package fleetctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// row is one object as get asks for it.
type row struct {
	Cluster    string          `json:"cluster"`
	Namespace  *string         `json:"namespace"`
	Name       string          `json:"name"`
	Kind       string          `json:"kind"`
	Resource   string          `json:"resource"`
	APIVersion string          `json:"apiVersion"`
	Columns    []cell          `json:"columns"`
	Object     json.RawMessage `json:"object"`
}

// cell is a Resource.columns entry.
type cell struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Priority int    `json:"priority"`
}

// getter runs one `get`.
type getter struct {
	o      *options
	c      *Client
	kind   kindRef
	name   string
	filter map[string]any
	sort   []map[string]any
	// fields is the selection of a Resource the output needs.
	fields string
	p      printer
	stderr io.Writer
}

func runGet(ctx context.Context, o *options, fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || len(args) > 2 {
		return usageError("get takes a kind and at most one name: kubectl fleet get pods [NAME]")
	}
	if fs.Changed("by") {
		return usageError("--by is a flag of count")
	}
	if fs.Changed("since") || fs.Changed("until") {
		return usageError("--since and --until are flags of changes")
	}
	if o.allNamespaces && o.namespace != "" {
		return usageError("-A and -n exclude each other")
	}
	if o.watchOnly {
		o.watch = true
	}
	if o.watchEvents && !o.watch {
		return usageError("--output-watch-events goes with --watch")
	}
	sortBy, err := sortPath(o.sortBy)
	if err != nil {
		return err
	}
	p, fields, err := newPrinter(o, stdout)
	if err != nil {
		return err
	}
	if ob, ok := p.(*objects); ok {
		ob.single = len(args) == 2
	}
	c, err := Connect(o.connect)
	if err != nil {
		return err
	}
	qctx, cancel := o.timeout(ctx)
	kind, err := resolveKind(qctx, c, args[0])
	cancel()
	if err != nil {
		return err
	}
	g := &getter{o: o, c: c, kind: kind, filter: o.filter(c, kind.filter), fields: fields, p: p, stderr: stderr}
	if len(args) == 2 {
		g.name = args[1]
		sel := "metadata.name=" + g.name
		if o.fieldSelector != "" {
			sel += "," + o.fieldSelector
		}
		g.filter["fieldSelector"] = sel
	}
	if sortBy != "" {
		g.sort = []map[string]any{{"field": sortBy}}
	}
	revision, n, err := g.list(ctx, !o.watchOnly)
	if err != nil {
		return o.filterError(err)
	}
	if !o.watchOnly {
		if err := p.flush(); err != nil {
			return err
		}
	}
	if n == 0 && !o.watchOnly {
		if g.name != "" {
			return fmt.Errorf("%s %q not found in any cluster", kind.resource, g.name)
		}
		fmt.Fprintln(stderr, g.noneFound())
	}
	if !o.watch {
		return nil
	}
	return o.filterError(g.watch(ctx, revision))
}

// noneFound is kubectl's message for an empty list.
func (g *getter) noneFound() string {
	if g.o.allNamespaces {
		return "No resources found"
	}
	ns := g.o.namespace
	if ns == "" {
		ns = g.c.namespace
	}
	return "No resources found in " + ns + " namespace."
}

// list prints (if print) every object of the filter, a page at a time,
// and returns the revision of the first page, from which a watch follows,
// and how many objects it found.
func (g *getter) list(ctx context.Context, print bool) (revision string, n int, err error) {
	q := `query($f: ResourceFilter, $first: Int, $after: String, $sort: [ResourceSort!]) {
  resources(filter: $f, first: $first, after: $after, sort: $sort) {
    revision
    staleClusters
    edges { node { ` + g.fields + ` } }
    pageInfo { hasNextPage endCursor }
  }
}`
	first := g.o.chunkSize
	if !print {
		first = 0
	}
	var after any
	for {
		var got struct {
			Resources struct {
				Revision      string
				StaleClusters []string
				Edges         []struct{ Node row }
				PageInfo      struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		qctx, cancel := g.o.timeout(ctx)
		err := g.c.Query(qctx, q, map[string]any{"f": g.filter, "first": first, "after": after, "sort": g.sort}, &got)
		cancel()
		if err != nil {
			return "", 0, err
		}
		if revision == "" {
			revision = got.Resources.Revision
			if print {
				g.warnStale(ctx, got.Resources.StaleClusters)
			}
		}
		rows := make([]row, 0, len(got.Resources.Edges))
		for _, e := range got.Resources.Edges {
			if g.keep(e.Node) {
				rows = append(rows, e.Node)
			}
		}
		n += len(rows)
		// kubectl prints the listed objects as ADDED events too.
		eventType := ""
		if g.o.watchEvents {
			eventType = "ADDED"
		}
		if err := g.p.rows(rows, eventType); err != nil {
			return "", 0, err
		}
		if !print || !got.Resources.PageInfo.HasNextPage {
			return revision, n, nil
		}
		after = got.Resources.PageInfo.EndCursor
	}
}

// warnStale warns on stderr, as kubectl prints an API server's warnings,
// about each selected cluster whose data is not current (staleClusters of
// the answer): its rows may be missing, or out of date. The warnings do
// not change the exit code.
func (g *getter) warnStale(ctx context.Context, stale []string) {
	if len(stale) == 0 {
		return
	}
	var got struct{ Clusters []clusterStatus }
	qctx, cancel := g.o.timeout(ctx)
	err := g.c.Query(qctx, `{ clusters { name status currentAsOf } }`, nil, &got)
	cancel()
	byName := map[string]clusterStatus{}
	if err == nil {
		for _, cl := range got.Clusters {
			byName[cl.Name] = cl
		}
	}
	fmt.Fprint(g.stderr, staleWarnings(stale, byName, time.Now()))
}

// staleWarnings is the warning of each stale cluster, with its status and
// how stale its data is when known (by its health in byName).
func staleWarnings(stale []string, byName map[string]clusterStatus, now time.Time) string {
	var b strings.Builder
	for _, name := range stale {
		what := "is not current"
		if cl, ok := byName[name]; ok {
			what = "is " + cl.Status + " (data " + freshness(cl.Status, cl.CurrentAsOf, now) + ")"
		}
		fmt.Fprintf(&b, "Warning: cluster %q %s: its rows may be missing or out of date\n", name, what)
	}
	return b.String()
}

// sortPath turns --sort-by, a path as kubectl writes it
// (".metadata.creationTimestamp", "{.status.phase}"), into fleetcache's
// path. fleetcache sorts by one value per object, so a path through a list
// ("[0]", "[*]", "[]") is refused here with what to write instead, rather
// than by the server's path parser.
func sortPath(sortBy string) (string, error) {
	path := strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(sortBy, "{"), "}"), ".")
	if step := listStep.FindString(path); step != "" {
		return "", usageError(fmt.Sprintf("--sort-by %q: fleetcache sorts by one value per object, so it refuses a path through a list (%s); "+
			"sort by a single value (.metadata.creationTimestamp, .status.phase), or select by the list's values with "+
			"--field-selector '%s>3' (holds where some element does)", sortBy, step, listStep.ReplaceAllString(path, "[]")))
	}
	return path, nil
}

// listStep is a step into a list in a JSONPath: "[0]", "[*]", "[]", "[1:3]";
// not a quoted key ("['a.b']", "[\"a.b\"]").
var listStep = regexp.MustCompile(`\[[^\]"']*\]`)

// keep drops the objects of another group's kind of the same name, which
// a filter on the bare kind selects too.
func (g *getter) keep(r row) bool {
	return !g.kind.shared || r.Resource == g.kind.resource
}

// watch follows resourceEvents from cursor, printing each change, and
// resumes from the last cursor it saw (an event's, or a heartbeat's) when
// the connection breaks; a cursor the server no longer retains makes it
// list again.
func (g *getter) watch(ctx context.Context, cursor string) error {
	q := `subscription($f: ResourceFilter, $since: String) {
  resourceEvents(filter: $f, since: $since) { type cursor resource { ` + g.fields + ` } }
}`
	const maxBackoff = 5 * time.Second
	backoff := 250 * time.Millisecond
	for {
		err := g.c.Subscribe(ctx, q, map[string]any{"f": g.filter, "since": cursor}, func(e event) error {
			backoff = 250 * time.Millisecond
			var got struct {
				ResourceEvents *struct {
					Type     string
					Cursor   string
					Resource row
				}
			}
			if len(e.Data) > 0 {
				if err := json.Unmarshal(e.Data, &got); err != nil {
					return fmt.Errorf("decode event: %w", err)
				}
			}
			if ev := got.ResourceEvents; ev != nil && g.keep(ev.Resource) {
				if err := g.p.rows([]row{ev.Resource}, ev.Type); err != nil {
					return err
				}
				if err := g.p.flush(); err != nil {
					return err
				}
			}
			// Only once the event is printed does the watch resume after it.
			if e.Extensions.Cursor != "" {
				cursor = e.Extensions.Cursor
			} else if got.ResourceEvents != nil {
				cursor = got.ResourceEvents.Cursor
			}
			return nil
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *Error
		switch {
		case errors.As(err, &se) && se.Code == "CURSOR_EXPIRED":
			fmt.Fprintln(g.stderr, "kubectl fleet: the watch fell behind the changes fleetcache keeps; listing again")
			rev, _, lerr := g.list(ctx, true)
			if lerr != nil {
				return lerr
			}
			if err := g.p.flush(); err != nil {
				return err
			}
			cursor = rev
			continue
		case err == nil || errors.Is(err, errInterrupted):
			fmt.Fprintf(g.stderr, "kubectl fleet: watch interrupted (%v); resuming after the last change in %s\n", err, backoff)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
