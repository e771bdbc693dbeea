package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/yaml"
)

// Filter selects objects, as the GraphQL API's ResourceFilter does (its
// JSON is that input's): values inside one field are ORed, fields are ANDed.
type Filter struct {
	Kinds           []string `json:"kinds,omitempty" jsonschema:"Kinds to select: \"Pod\", \"Deployment\" (a bare kind matches it in any API group) or \"Deployment.apps\". Empty: every kind."`
	Clusters        []string `json:"clusters,omitempty" jsonschema:"Cluster names. Empty: every cluster. cluster_health lists them."`
	ClusterSelector string   `json:"clusterSelector,omitempty" jsonschema:"A Kubernetes label selector over the clusters' labels, e.g. \"env=prod,region in (eu,us)\"."`
	Namespaces      []string `json:"namespaces,omitempty" jsonschema:"Namespaces. Empty: every namespace, and cluster-scoped objects."`
	LabelSelector   string   `json:"labelSelector,omitempty" jsonschema:"A Kubernetes label selector over the objects' labels: \"app=web,tier in (fe,be)\", \"!canary\"."`
	FieldSelector   string   `json:"fieldSelector,omitempty" jsonschema:"Requirements on values inside the objects, comma-separated: \"status.phase!=Running\", \"spec.nodeName in (n1,n2)\", \"spec.containers[].image=nginx:1.25\", \"status.containerStatuses[].restartCount>3\", \"metadata.annotations[\\\"example.com/owner\\\"]=team-a\". Operators: = == != in notin > < and a bare path (exists) or !path (absent)."`
	Search          string   `json:"search,omitempty" jsonschema:"Words that must each begin a token of the object's name, namespace, labels, annotation values or container images, case-insensitive: \"redis prod\"."`
	NameContains    string   `json:"nameContains,omitempty" jsonschema:"A substring of the object's name."`
}

// SortKey orders objects by the value at a path.
type SortKey struct {
	Field string `json:"field" jsonschema:"A path inside the objects: \"metadata.creationTimestamp\", \"status.startTime\", \"metadata.name\", \"cluster\". Not a path through a list ([])."`
	Order Order  `json:"order,omitempty" jsonschema:"ASC (default) or DESC."`
}

// Order is a sort order: ASC or DESC.
type Order string

// Format is how get_resource writes an object: yaml or json.
type Format string

// GroupBy is what count_resources groups by.
type GroupBy string

// The enums' values, by type, for the schemas.
var enums = map[reflect.Type][]any{
	reflect.TypeFor[Order]():   {"ASC", "DESC"},
	reflect.TypeFor[Format]():  {"yaml", "json"},
	reflect.TypeFor[GroupBy](): {"CLUSTER", "CLUSTER_LABEL", "NAMESPACE", "KIND", "LABEL", "FIELD"},
}

// Paging continues a list where the last call stopped.
type Paging struct {
	First int    `json:"first,omitempty" jsonschema:"The most objects to return (the size budget may return fewer). Default and maximum: the server's page size (1000)."`
	After string `json:"after,omitempty" jsonschema:"The nextCursor of the previous call with the same filter and sort, to continue after it."`
}

// List is what the list tools (find_resources, get_table) take: a
// filter, an order and where to continue.
type List struct {
	Filter
	Sort []SortKey `json:"sort,omitempty" jsonschema:"Order by these paths, then cluster, namespace, name. Default: cluster, namespace, name."`
	Paging
}

// FindInput is find_resources' arguments.
type FindInput struct {
	List
	Fields []string `json:"fields,omitempty" jsonschema:"Up to 8 paths whose values to return with each object, e.g. [\"status.phase\", \"spec.nodeName\", \"spec.containers[].image\"]. A path through a list ([]) gives the list of values."`
}

// Item is one object in a list: its identity, labels and the values of the
// fields asked for.
type Item struct {
	Cluster   string            `json:"cluster"`
	Kind      string            `json:"kind" jsonschema:"\"Pod\", or \"Deployment.apps\" outside the core group: what get_resource takes."`
	Namespace string            `json:"namespace,omitempty"`
	Name      string            `json:"name"`
	Created   string            `json:"created,omitempty" jsonschema:"metadata.creationTimestamp."`
	Labels    map[string]string `json:"labels,omitempty"`
	Fields    map[string]any    `json:"fields,omitempty" jsonschema:"The values of the paths asked for (fields), by path; absent when the object has none."`
}

// Stale is a selected cluster whose data is not known current.
type Stale struct {
	Cluster     string `json:"cluster"`
	Status      string `json:"status" jsonschema:"PENDING, SYNCING, DEGRADED or DISCONNECTED. cluster_health says why."`
	CurrentAsOf string `json:"currentAsOf,omitempty" jsonschema:"The last moment its data was known current; absent if never (initial sync)."`
}

// Freshness is what an answer says of the clusters it read.
type Freshness struct {
	StaleClusters  []Stale  `json:"staleClusters,omitempty" jsonschema:"Selected clusters whose data is not current: their objects are the last known state, or missing."`
	DeniedClusters []string `json:"deniedClusters,omitempty" jsonschema:"Clusters that could not say what you may see (unreachable): their objects are left out."`
}

// Page is what a list answer says besides its objects.
type Page struct {
	TotalCount int    `json:"totalCount" jsonschema:"How many objects match in all."`
	Returned   int    `json:"returned"`
	NextCursor string `json:"nextCursor,omitempty" jsonschema:"Pass it as after, with the same filter and sort, for the next objects; absent when there are none."`
	Truncated  bool   `json:"truncated,omitempty" jsonschema:"The size budget cut the answer before first objects."`
	Freshness
}

// FindOutput is find_resources' answer.
type FindOutput struct {
	Summary string `json:"summary" jsonschema:"One line: how many matched, how many are returned, which clusters are stale, how to continue."`
	Page
	Items []Item `json:"items"`
}

// GetInput is get_resource's arguments.
type GetInput struct {
	Cluster   string `json:"cluster" jsonschema:"The cluster name."`
	Kind      string `json:"kind" jsonschema:"\"Pod\", or \"Deployment.apps\" outside the core group (as find_resources returns it)."`
	Namespace string `json:"namespace,omitempty" jsonschema:"The namespace; empty for cluster-scoped objects (Nodes, Namespaces)."`
	Name      string `json:"name"`
	Format    Format `json:"format,omitempty" jsonschema:"yaml (default) or json."`
}

// GetOutput is get_resource's answer.
type GetOutput struct {
	Summary   string `json:"summary"`
	Cluster   string `json:"cluster"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Format    Format `json:"format"`
	Object    string `json:"object" jsonschema:"The object as the member's API server serves it, without metadata.managedFields and the last-applied annotation, in format."`
	Bytes     int    `json:"bytes" jsonschema:"The length of the whole object in format."`
	Truncated bool   `json:"truncated,omitempty" jsonschema:"object was cut at the size budget: use find_resources with fields to read parts."`
	Stale     *Stale `json:"stale,omitempty" jsonschema:"Set when the object's cluster is not current: this is its last known state."`
}

// CountInput is count_resources' arguments.
type CountInput struct {
	Filter
	GroupBy  GroupBy `json:"groupBy,omitempty" jsonschema:"Count per value of: CLUSTER, CLUSTER_LABEL (labelKey), NAMESPACE, KIND, LABEL (labelKey) or FIELD (field). Empty: the total only."`
	LabelKey string  `json:"labelKey,omitempty" jsonschema:"The label key, with groupBy LABEL or CLUSTER_LABEL."`
	Field    string  `json:"field,omitempty" jsonschema:"The path, with groupBy FIELD: \"status.phase\", \"spec.nodeName\", \"spec.containers[].image\"."`
	Top      int     `json:"top,omitempty" jsonschema:"The most values to return, highest counts first. Default 20."`
}

// Group is one value and how many matching objects have it.
type Group struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// CountOutput is count_resources' answer.
type CountOutput struct {
	Summary    string  `json:"summary"`
	TotalCount int     `json:"totalCount"`
	Groups     []Group `json:"groups,omitempty" jsonschema:"Values and counts, highest first. Objects without a value are not counted."`
	MoreGroups int     `json:"moreGroups,omitempty" jsonschema:"How many more values there are beyond groups."`
	Freshness
}

// HealthInput is cluster_health's arguments.
type HealthInput struct {
	Cluster      string `json:"cluster,omitempty" jsonschema:"One cluster's name. Empty: every cluster."`
	Selector     string `json:"selector,omitempty" jsonschema:"A label selector over the clusters' labels: \"env=prod\"."`
	ProblemsOnly bool   `json:"problemsOnly,omitempty" jsonschema:"Only the clusters that are not SYNCED."`
}

// TypeHealth is the sync state of one resource type of a cluster that is
// not current, or that had an error.
type TypeHealth struct {
	Resource    string `json:"resource" jsonschema:"\"pods\", \"deployments.apps\"."`
	Status      string `json:"status"`
	ObjectCount int    `json:"objectCount"`
	LastError   string `json:"lastError,omitempty" jsonschema:"The last error listing or watching it."`
	CurrentAsOf string `json:"currentAsOf,omitempty"`
}

// ClusterHealth is a cluster's health, and why it is not current.
type ClusterHealth struct {
	Name                string            `json:"name"`
	Status              string            `json:"status" jsonschema:"SYNCED (current), PENDING, SYNCING (initial list), DEGRADED (some types fail) or DISCONNECTED (unreachable: last known state)."`
	Message             string            `json:"message,omitempty" jsonschema:"Why the cluster is not SYNCED."`
	CurrentAsOf         string            `json:"currentAsOf,omitempty" jsonschema:"The last moment all its data was known current."`
	LastEventTime       string            `json:"lastEventTime,omitempty"`
	ObjectCount         int               `json:"objectCount"`
	Labels              map[string]string `json:"labels,omitempty"`
	Source              string            `json:"source,omitempty"`
	ControlPlaneHealthy *bool             `json:"controlPlaneHealthy,omitempty" jsonschema:"What the inventory (a ClusterProfile) says of the control plane, if anything."`
	ControlPlaneMessage string            `json:"controlPlaneMessage,omitempty"`
	Types               int               `json:"types" jsonschema:"How many resource types are cached."`
	Problems            []TypeHealth      `json:"problems,omitempty" jsonschema:"The types that are not SYNCED or had an error: the why."`
}

// HealthOutput is cluster_health's answer.
type HealthOutput struct {
	Summary  string          `json:"summary"`
	Clusters []ClusterHealth `json:"clusters"`
	Omitted  int             `json:"omitted,omitempty" jsonschema:"Clusters left out by the size budget: ask for one, or problemsOnly."`
}

// TableInput is get_table's arguments.
type TableInput struct {
	List
	Wide bool `json:"wide,omitempty" jsonschema:"Add the columns of kubectl get -o wide (a Pod's IP and Node, a Deployment's images)."`
}

// Table is the rows of one kind, as kubectl get prints them.
type Table struct {
	Kind    string     `json:"kind"`
	Columns []string   `json:"columns" jsonschema:"CLUSTER, NAMESPACE, then the columns kubectl get prints for the kind."`
	Rows    [][]string `json:"rows"`
}

// TableOutput is get_table's answer.
type TableOutput struct {
	Summary string `json:"summary"`
	Page
	Tables []Table `json:"tables" jsonschema:"One table per kind, in the order the kinds first appear."`
}

// The tools' descriptions, written for a model.
const (
	findDescription = `List Kubernetes objects across every cluster of the fleet from fleetcache's index (never the clusters themselves), ` +
		`filtered by kind, cluster, cluster labels, namespace, label selector, field selector (values inside the objects, e.g. status.phase!=Running) and search words, ` +
		`optionally sorted, with the values of chosen paths (fields). Returns a summary line, the total count, the objects (cluster, kind, namespace, name, labels, fields) ` +
		`up to a size budget, and nextCursor to pass as after for more. Use count_resources when only numbers matter, get_table for kubectl-style columns (status, restarts, age), ` +
		`get_resource to read one object whole.`
	getDescription = `Read one Kubernetes object whole, as YAML (default) or JSON, from fleetcache's copy of its cluster, without managedFields. ` +
		`Identify it by cluster, kind ("Pod", "Deployment.apps"), namespace and name, as find_resources returns them. An object you may not see is reported as not found.`
	countDescription = `Count Kubernetes objects across the fleet with the filters of find_resources, in total or grouped by cluster, cluster label, namespace, kind, label or a path ` +
		`(groupBy FIELD, e.g. field "status.phase" or "spec.containers[].image"), highest counts first. Cheap even over millions of objects: ` +
		`use it first to see where things are and how many.`
	healthDescription = `Report each cluster's sync health: SYNCED (fleetcache's copy is current), or why not (PENDING, SYNCING, DEGRADED, DISCONNECTED) with the message, ` +
		`the types that fail and their last errors, and since when the data is not current; also the clusters' labels and object counts. ` +
		`Call it to learn the cluster names and labels, and before trusting answers about a stale cluster.`
	tableDescription = `List Kubernetes objects as kubectl get prints them (the member API server's columns: a Pod's Ready, Status, Restarts, Age; with wide, IP and Node), ` +
		`one table per kind with CLUSTER and NAMESPACE first, with the filters, sort and paging of find_resources. Good for spotting what is not Running or restarting.`
)

// addTools adds the tools to the SDK server, with schemas inferred from
// their types and the enums filled in.
func (s *Server) addTools() error {
	readOnly := &mcpsdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	add(addTool(s, "find_resources", "Find objects", findDescription, readOnly, s.find))
	add(addTool(s, "get_resource", "Get one object", getDescription, readOnly, s.get))
	add(addTool(s, "count_resources", "Count objects", countDescription, readOnly, s.count))
	add(addTool(s, "cluster_health", "Cluster health", healthDescription, readOnly, s.health))
	add(addTool(s, "get_table", "kubectl get table", tableDescription, readOnly, s.table))
	add(addTool(s, "what_changed", "What changed", changesDescription, readOnly, s.whatChanged))
	return errors.Join(errs...)
}

// summarized is a tool's answer: its summary line leads its text.
type summarized interface{ summaryLine() string }

func (o FindOutput) summaryLine() string   { return o.Summary }
func (o GetOutput) summaryLine() string    { return o.Summary }
func (o CountOutput) summaryLine() string  { return o.Summary }
func (o HealthOutput) summaryLine() string { return o.Summary }
func (o TableOutput) summaryLine() string  { return o.Summary }

// addTool adds one tool, its handler run with the request's caller. The
// arguments are checked against the input schema inferred from In; the
// answer, of a type whose schema is the output schema, is encoded once
// for the structured content and the text (the SDK's typed AddTool would
// decode and validate it again: that took most of a call's time).
func addTool[In any, Out summarized](s *Server, name, title, description string, ann *mcpsdk.ToolAnnotations, h func(context.Context, In) (*mcpsdk.CallToolResult, Out, error)) error {
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{}}
	for t, values := range enums {
		opts.TypeSchemas[t] = &jsonschema.Schema{Type: "string", Enum: values}
	}
	in, err := jsonschema.For[In](opts)
	if err != nil {
		return fmt.Errorf("tool %s: input schema: %w", name, err)
	}
	inResolved, err := in.Resolve(nil)
	if err != nil {
		return fmt.Errorf("tool %s: input schema: %w", name, err)
	}
	out, err := jsonschema.For[Out](opts)
	if err != nil {
		return fmt.Errorf("tool %s: output schema: %w", name, err)
	}
	a := *ann
	a.Title = title
	tool := &mcpsdk.Tool{Name: name, Title: title, Description: description, InputSchema: in, OutputSchema: out, Annotations: &a}
	s.sdk.AddTool(tool, func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		args, err := decodeArguments[In](inResolved, req.Params.Arguments)
		if err != nil {
			return toolError(err), nil
		}
		res, answer, err := h(callerContext(ctx, req.Extra), args)
		if err != nil {
			return toolError(err), nil
		}
		b, err := json.Marshal(answer)
		if err != nil {
			return nil, fmt.Errorf("encode the answer: %w", err)
		}
		if res == nil {
			// The summary first, where a model reads first, then the
			// answer.
			res = &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: answer.summaryLine()}, &mcpsdk.TextContent{Text: string(b)}}}
		}
		res.StructuredContent = json.RawMessage(b)
		return res, nil
	})
	return nil
}

// decodeArguments checks a call's arguments against the tool's input
// schema and decodes them.
func decodeArguments[In any](schema *jsonschema.Resolved, raw json.RawMessage) (In, error) {
	var args In
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return args, fmt.Errorf("arguments: %w", err)
	}
	if err := schema.Validate(v); err != nil {
		return args, fmt.Errorf("validating \"arguments\": %w", err)
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return args, fmt.Errorf("arguments: %w", err)
	}
	return args, nil
}

// toolError is the answer of a call that failed: a tool error whose text
// says what is wrong.
func toolError(err error) *mcpsdk.CallToolResult {
	var res mcpsdk.CallToolResult
	res.SetError(err)
	return &res
}

// findDocument is find_resources' query, with n fields (f0, f1, …, their
// paths in $p0, $p1, …): one text per n, so the engine's document cache
// keeps each.
func findDocument(n int) string {
	params, fields := fieldParams(n)
	return `query FindResources($filter: ResourceFilter, $sort: [ResourceSort!], $first: Int, $after: String, $count: Boolean!` + params + `) {
  resources(filter: $filter, sort: $sort, first: $first, after: $after) {
    totalCount @include(if: $count) deniedClusters staleness { cluster status currentAsOf }
    edges { cursor node { cluster apiVersion kind namespace name creationTimestamp labels` + fields + ` } }
    pageInfo { hasNextPage endCursor }
  }
}`
}

// fieldParams returns the variables ($p0: String!, …) and the selections
// (f0: field(path: $p0) …) of n fields of a query.
func fieldParams(n int) (params, fields string) {
	var p, f strings.Builder
	for i := range n {
		fmt.Fprintf(&p, ", $p%d: String!", i)
		fmt.Fprintf(&f, " f%d: field(path: $p%d)", i, i)
	}
	return p.String(), f.String()
}

// fieldVars returns the variables of the paths of fieldParams.
func fieldVars(paths []string) map[string]any {
	vars := map[string]any{}
	for i, p := range paths {
		vars[fmt.Sprintf("p%d", i)] = p
	}
	return vars
}

// fieldValues returns the values that an object selected with
// fieldParams has at paths, by path; nil when it has none.
func fieldValues(raw json.RawMessage, paths []string) (map[string]any, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, fmt.Errorf("decode an object's fields: %w", err)
	}
	var out map[string]any
	for i, p := range paths {
		if v := values[fmt.Sprintf("f%d", i)]; len(v) > 0 && !bytes.Equal(v, []byte("null")) {
			if out == nil {
				out = map[string]any{}
			}
			out[p] = v
		}
	}
	return out, nil
}

// maxFields bounds find_resources' fields.
const maxFields = 8

// listVars are the variables of a list query (find_resources, get_table).
type listVars struct {
	Filter Filter         `json:"filter"`
	Sort   []SortKey      `json:"sort,omitempty"`
	First  int            `json:"first"`
	After  string         `json:"after,omitempty"`
	Count  bool           `json:"count"`
	Paths  map[string]any `json:"-"`
}

// MarshalJSON writes the variables, the field paths ($p0, …) among them.
func (v listVars) MarshalJSON() ([]byte, error) {
	type plain listVars
	m, err := asVariables(plain(v))
	if err != nil {
		return nil, err
	}
	for k, p := range v.Paths {
		m[k] = p
	}
	if v.After == "" {
		m["after"] = nil
	}
	return json.Marshal(m)
}

// node is an object as the list queries select it.
type node struct {
	Cluster           string
	APIVersion        string
	Kind              string
	Namespace         string
	Name              string
	CreationTimestamp string
	Labels            map[string]string
	Columns           []struct {
		Name, Value string
		Priority    int
	}
}

// itemOf returns the Item of an object a list query selected, with the
// values of paths (selected with fieldParams).
func itemOf(raw json.RawMessage, paths []string) (Item, error) {
	var n node
	if err := json.Unmarshal(raw, &n); err != nil {
		return Item{}, fmt.Errorf("decode an object: %w", err)
	}
	fields, err := fieldValues(raw, paths)
	return Item{Cluster: n.Cluster, Kind: kindName(n.APIVersion, n.Kind), Namespace: n.Namespace, Name: n.Name, Created: n.CreationTimestamp, Labels: n.Labels, Fields: fields}, err
}

// kindName is the kind as get_resource and filters take it: "Pod", or
// "Deployment.apps" outside the core group.
func kindName(apiVersion, kind string) string {
	if group, _, ok := strings.Cut(apiVersion, "/"); ok {
		return kind + "." + group
	}
	return kind
}

// connection is a list query's page.
type connection struct {
	TotalCount     int
	DeniedClusters []string
	Staleness      []Stale
	Edges          []edge
	PageInfo       pageInfo
}

// edge is an object of a list query's page, with its cursor: where the
// list continues after it.
type edge struct {
	Cursor string
	Node   json.RawMessage
}

// pageInfo is where a list query's page ends.
type pageInfo struct {
	HasNextPage bool
	EndCursor   string
}

// listed is what collect read, besides the items.
type listed struct {
	total     int
	fresh     Freshness
	next      string
	truncated bool
}

// page is the Page of a list of returned items.
func (l listed) page(returned int) Page {
	return Page{TotalCount: l.total, Returned: returned, NextCursor: l.next, Truncated: l.truncated, Freshness: l.fresh}
}

// collected is what collect gathered besides the items: where to
// continue, and whether the budget cut the list.
type collected struct {
	next      string
	truncated bool
}

// readPage reads one page of a list of at most first objects after the
// cursor after ("" for the start); page counts the pages of the call
// from 0.
type readPage func(page, first int, after string) ([]edge, pageInfo, error)

// collect reads a list's pages from after until it has first items, the
// budget is spent or no object is left; convert turns each edge's node
// into an item, whose JSON counts against the budget (at least one item
// is returned whatever its size).
func collect[T any](s *Server, first int, after string, read readPage, convert func(json.RawMessage) (T, error)) ([]T, collected, error) {
	var items []T
	var out collected
	used := 0
	for page := 0; ; page++ {
		edges, info, err := read(page, min(max(first-len(items), 0), maxChunk), after)
		if err != nil {
			return nil, collected{}, err
		}
		for _, e := range edges {
			item, err := convert(e.Node)
			if err != nil {
				return nil, collected{}, err
			}
			b, err := json.Marshal(item)
			if err != nil {
				return nil, collected{}, fmt.Errorf("encode an item: %w", err)
			}
			if len(items) > 0 && used+len(b)+1 > s.opts.ResultBytes {
				out.truncated = true
				return items, out, nil
			}
			items = append(items, item)
			used += len(b) + 1
			out.next = e.Cursor
		}
		if !info.HasNextPage || first == 0 {
			out.next = ""
			return items, out, nil
		}
		if len(items) >= first {
			return items, out, nil
		}
		after = info.EndCursor
	}
}

// collectResources is collect over a resources query (doc, with vars):
// the count and the freshness come from its first page.
func collectResources[T any](ctx context.Context, s *Server, doc string, vars listVars, first int, convert func(json.RawMessage) (T, error)) ([]T, listed, error) {
	var out listed
	items, c, err := collect(s, first, vars.After, func(page, first int, after string) ([]edge, pageInfo, error) {
		vars.First, vars.After, vars.Count = first, after, page == 0
		var d struct{ Resources connection }
		if err := s.query(ctx, doc, vars, &d); err != nil {
			return nil, pageInfo{}, err
		}
		if page == 0 {
			out.total = d.Resources.TotalCount
			out.fresh = Freshness{StaleClusters: d.Resources.Staleness, DeniedClusters: d.Resources.DeniedClusters}
		}
		return d.Resources.Edges, d.Resources.PageInfo, nil
	}, convert)
	if err != nil {
		return nil, listed{}, err
	}
	out.next, out.truncated = c.next, c.truncated
	return items, out, nil
}

// pageSize returns the first of a call: the server's page size unless
// the call asks for fewer.
func (s *Server) pageSize(p Paging) (int, error) {
	switch {
	case p.First < 0:
		return 0, fmt.Errorf("first is %d: it must be 0 or more", p.First)
	case p.First == 0:
		return s.opts.PageSize, nil
	}
	return min(p.First, s.opts.PageSize), nil
}

// pageWithFields is pageSize for a call that also asks for the values of
// paths (fields): at most maxFields of them.
func (s *Server) pageWithFields(p Paging, fields []string) (int, error) {
	if len(fields) > maxFields {
		return 0, fmt.Errorf("fields has %d paths: at most %d", len(fields), maxFields)
	}
	return s.pageSize(p)
}

func (s *Server) find(ctx context.Context, in FindInput) (*mcpsdk.CallToolResult, FindOutput, error) {
	first, err := s.pageWithFields(in.Paging, in.Fields)
	if err != nil {
		return nil, FindOutput{}, err
	}
	vars := listVars{Filter: in.Filter, Sort: in.Sort, After: in.After, Paths: fieldVars(in.Fields)}
	items, l, err := collectResources(ctx, s, findDocument(len(in.Fields)), vars, first, func(raw json.RawMessage) (Item, error) {
		return itemOf(raw, in.Fields)
	})
	if err != nil {
		return nil, FindOutput{}, err
	}
	out := FindOutput{Page: l.page(len(items)), Items: items}
	if out.Items == nil {
		out.Items = []Item{}
	}
	out.Summary = listSummary("objects", l, len(items), s.opts.ResultBytes)
	return nil, out, nil
}

// getDocument is get_resource's query: the object, and its cluster's
// freshness.
const getDocument = `query GetResource($cluster: String!, $kind: String!, $namespace: String, $name: String!) {
  resource(cluster: $cluster, kind: $kind, namespace: $namespace, name: $name) { object }
  cluster(name: $cluster) { name status currentAsOf }
}`

func (s *Server) get(ctx context.Context, in GetInput) (*mcpsdk.CallToolResult, GetOutput, error) {
	format := in.Format
	if format == "" {
		format = "yaml"
	}
	vars := map[string]any{"cluster": in.Cluster, "kind": in.Kind, "name": in.Name, "namespace": nil}
	if in.Namespace != "" {
		vars["namespace"] = in.Namespace
	}
	var d struct {
		Resource *struct{ Object json.RawMessage }
		Cluster  *struct{ Name, Status, CurrentAsOf string }
	}
	if err := s.query(ctx, getDocument, vars, &d); err != nil {
		return nil, GetOutput{}, err
	}
	where := fmt.Sprintf("in cluster %q", in.Cluster)
	if in.Namespace != "" {
		where = fmt.Sprintf("in namespace %q of cluster %q", in.Namespace, in.Cluster)
	}
	switch {
	case d.Cluster == nil:
		return nil, GetOutput{}, fmt.Errorf("no cluster named %q: cluster_health lists the clusters", in.Cluster)
	case d.Resource == nil:
		return nil, GetOutput{}, fmt.Errorf("no %s %q %s: fleetcache's copy does not hold it, or you may not see it (find_resources finds objects by name with nameContains)", in.Kind, in.Name, where)
	}
	text := d.Resource.Object
	if format == "yaml" {
		y, err := yaml.JSONToYAML(text)
		if err != nil {
			return nil, GetOutput{}, fmt.Errorf("write the object as YAML: %w", err)
		}
		text = y
	} else {
		var b bytes.Buffer
		if err := json.Indent(&b, text, "", "  "); err != nil {
			return nil, GetOutput{}, fmt.Errorf("write the object as JSON: %w", err)
		}
		text = b.Bytes()
	}
	out := GetOutput{Cluster: in.Cluster, Kind: in.Kind, Namespace: in.Namespace, Name: in.Name, Format: format, Bytes: len(text)}
	if len(text) > s.opts.ResultBytes {
		// Cut after a whole line, so that no character is cut in two.
		cut := bytes.LastIndexByte(text[:s.opts.ResultBytes], '\n') + 1
		if cut == 0 {
			cut = len(bytes.ToValidUTF8(text[:s.opts.ResultBytes], nil))
		}
		text, out.Truncated = text[:cut], true
	}
	out.Object = string(text)
	if d.Cluster.Status != "SYNCED" {
		out.Stale = &Stale{Cluster: d.Cluster.Name, Status: d.Cluster.Status, CurrentAsOf: d.Cluster.CurrentAsOf}
	}
	out.Summary = getSummary(out, s.opts.ResultBytes)
	comment := "# "
	if format == "json" {
		comment = ""
	}
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: comment + out.Summary + "\n" + out.Object}}}
	return res, out, nil
}

// countDocument is count_resources' query: the total, and the groups
// when asked for.
const countDocument = `query CountResources($filter: ResourceFilter, $by: FacetKey!, $labelKey: String, $field: String, $groups: Boolean!) {
  resources(filter: $filter, first: 0) { totalCount deniedClusters staleness { cluster status currentAsOf } }
  facets(filter: $filter, by: $by, labelKey: $labelKey, field: $field) @include(if: $groups) { value count }
}`

// defaultTop is count_resources' top when unset.
const defaultTop = 20

func (s *Server) count(ctx context.Context, in CountInput) (*mcpsdk.CallToolResult, CountOutput, error) {
	top := in.Top
	switch {
	case top < 0:
		return nil, CountOutput{}, fmt.Errorf("top is %d: it must be 1 or more", top)
	case top == 0:
		top = defaultTop
	}
	vars := map[string]any{"filter": in.Filter, "by": cmp.Or(string(in.GroupBy), "CLUSTER"), "groups": in.GroupBy != "", "labelKey": nil, "field": nil}
	if in.LabelKey != "" {
		vars["labelKey"] = in.LabelKey
	}
	if in.Field != "" {
		vars["field"] = in.Field
	}
	var d struct {
		Resources connection
		Facets    []Group
	}
	if err := s.query(ctx, countDocument, vars, &d); err != nil {
		return nil, CountOutput{}, err
	}
	out := CountOutput{TotalCount: d.Resources.TotalCount, Freshness: Freshness{StaleClusters: d.Resources.Staleness, DeniedClusters: d.Resources.DeniedClusters}}
	used := 0
	for i, g := range d.Facets {
		used += len(g.Value) + 24
		if i >= top || (i > 0 && used > s.opts.ResultBytes) {
			out.MoreGroups = len(d.Facets) - i
			break
		}
		out.Groups = append(out.Groups, g)
	}
	out.Summary = countSummary(in, out)
	return nil, out, nil
}

// healthDocument is cluster_health's query.
const healthDocument = `query ClusterHealth($selector: String) {
  clusters(selector: $selector) {
    name status message currentAsOf lastEventTime objectCount labels source controlPlaneHealthy controlPlaneMessage
    resources { resource status objectCount lastError currentAsOf }
  }
}`

// clusterStatus is a cluster as healthDocument selects it.
type clusterStatus struct {
	ClusterHealth
	Resources []TypeHealth
}

func (s *Server) health(ctx context.Context, in HealthInput) (*mcpsdk.CallToolResult, HealthOutput, error) {
	clusters, err := s.clusters(ctx, in.Selector)
	if err != nil {
		return nil, HealthOutput{}, err
	}
	if in.Cluster != "" {
		var one []ClusterHealth
		var names []string
		for _, c := range clusters {
			names = append(names, c.Name)
			if c.Name == in.Cluster {
				one = append(one, c)
			}
		}
		if len(one) == 0 {
			return nil, HealthOutput{}, fmt.Errorf("no cluster named %q%s; the clusters are: %s", in.Cluster, selected(in.Selector), strings.Join(names, ", "))
		}
		clusters = one
	}
	out := HealthOutput{Clusters: []ClusterHealth{}}
	used := 0
	for _, c := range clusters {
		if in.ProblemsOnly && c.Status == "SYNCED" {
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, HealthOutput{}, fmt.Errorf("encode a cluster: %w", err)
		}
		if len(out.Clusters) > 0 && used+len(b) > s.opts.ResultBytes {
			out.Omitted++
			continue
		}
		used += len(b)
		out.Clusters = append(out.Clusters, c)
	}
	out.Summary = healthSummary(clusters, out)
	return nil, out, nil
}

// clusters returns the health of the clusters that selector selects
// (every cluster when empty), with only their types' problems.
func (s *Server) clusters(ctx context.Context, selector string) ([]ClusterHealth, error) {
	vars := map[string]any{"selector": nil}
	if selector != "" {
		vars["selector"] = selector
	}
	var d struct{ Clusters []clusterStatus }
	if err := s.query(ctx, healthDocument, vars, &d); err != nil {
		return nil, err
	}
	out := make([]ClusterHealth, 0, len(d.Clusters))
	for _, c := range d.Clusters {
		h := c.ClusterHealth
		h.Types = len(c.Resources)
		for _, r := range c.Resources {
			if r.Status != "SYNCED" || r.LastError != "" {
				h.Problems = append(h.Problems, r)
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// tableDocument is get_table's query.
const tableDocument = `query GetTable($filter: ResourceFilter, $sort: [ResourceSort!], $first: Int, $after: String, $count: Boolean!) {
  resources(filter: $filter, sort: $sort, first: $first, after: $after) {
    totalCount @include(if: $count) deniedClusters staleness { cluster status currentAsOf }
    edges { cursor node { cluster apiVersion kind namespace name columns(age: true) { name value priority } } }
    pageInfo { hasNextPage endCursor }
  }
}`

// row is one object of a table: its kind and its cells.
type row struct {
	Kind    string   `json:"kind"`
	Columns []string `json:"-"`
	Cells   []string `json:"cells"`
}

func (s *Server) table(ctx context.Context, in TableInput) (*mcpsdk.CallToolResult, TableOutput, error) {
	first, err := s.pageSize(in.Paging)
	if err != nil {
		return nil, TableOutput{}, err
	}
	vars := listVars{Filter: in.Filter, Sort: in.Sort, After: in.After}
	rows, l, err := collectResources(ctx, s, tableDocument, vars, first, func(raw json.RawMessage) (row, error) {
		var n node
		if err := json.Unmarshal(raw, &n); err != nil {
			return row{}, fmt.Errorf("decode an object: %w", err)
		}
		r := row{Kind: kindName(n.APIVersion, n.Kind), Columns: []string{"CLUSTER", "NAMESPACE"}, Cells: []string{n.Cluster, n.Namespace}}
		for _, c := range n.Columns {
			if c.Priority > 0 && !in.Wide {
				continue
			}
			r.Columns = append(r.Columns, strings.ToUpper(c.Name))
			r.Cells = append(r.Cells, c.Value)
		}
		return r, nil
	})
	if err != nil {
		return nil, TableOutput{}, err
	}
	out := TableOutput{Page: l.page(len(rows)), Tables: tables(rows)}
	out.Summary = listSummary("objects", l, len(rows), s.opts.ResultBytes)
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: out.Summary + "\n\n" + renderTables(out.Tables)}}}
	return res, out, nil
}

// tables groups rows by kind and columns, in the order they first
// appear.
func tables(rows []row) []Table {
	out := []Table{}
	at := map[string]int{}
	for _, r := range rows {
		// A custom resource's columns are each cluster's CRD's.
		key := r.Kind + "\x00" + strings.Join(r.Columns, "\x00")
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, Table{Kind: r.Kind, Columns: r.Columns})
		}
		out[i].Rows = append(out[i].Rows, r.Cells)
	}
	return out
}
