package fleetctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// ClusterAnnotation is the annotation that -o json, -o yaml and
// custom-columns add to each object: the cluster it comes from (Karmada and
// Clusterpedia mark their objects the same way).
const ClusterAnnotation = "fleetcache.io/cluster"

// printer prints the rows of get: the listed objects (eventType ""), then
// each change of a watch.
type printer interface {
	rows(rs []row, eventType string) error
	// flush ends a list, or an event of a watch.
	flush() error
}

const (
	tableFields  = `cluster namespace name kind resource apiVersion columns(age: true) { name value priority }`
	objectFields = `cluster namespace name kind resource apiVersion object`
)

// newPrinter returns the printer of -o and the Resource fields it needs.
func newPrinter(o *options, w io.Writer) (printer, string, error) {
	out := o.output
	switch {
	case out == "" || out == "wide":
		return &table{w: w, wide: out == "wide", namespaces: o.allNamespaces, events: o.watchEvents}, tableFields, nil
	case out == "name":
		return &names{w: w, events: o.watchEvents}, `cluster kind resource name`, nil
	case out == "json" || out == "yaml":
		return &objects{w: w, yaml: out == "yaml", watch: o.watch, events: o.watchEvents}, objectFields, nil
	case strings.HasPrefix(out, "jsonpath="):
		tmpl := strings.TrimPrefix(out, "jsonpath=")
		p := jsonpath.New("output").AllowMissingKeys(true)
		if err := p.Parse(tmpl); err != nil {
			return nil, "", usageError(fmt.Sprintf("-o jsonpath: %q: %v", tmpl, err))
		}
		return &objects{w: w, template: p, watch: o.watch, events: o.watchEvents}, objectFields, nil
	case strings.HasPrefix(out, "custom-columns="):
		cc, err := newCustomColumns(strings.TrimPrefix(out, "custom-columns="), w, o.watchEvents)
		return cc, objectFields, err
	}
	return nil, "", usageError(fmt.Sprintf("unknown output format %q: use wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,...", out))
}

// newTabWriter aligns columns as kubectl does (its printers.GetNewTabWriter).
func newTabWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0) }

// table prints rows as kubectl get does: a header of the column names in
// capitals, then one line per object, aligned; CLUSTER first, NAMESPACE
// next with -A for namespaced kinds, EVENT before them with
// --output-watch-events. Without wide only the columns of priority 0.
// Rows whose columns differ (a custom resource's printer columns in two
// clusters) start a new table.
type table struct {
	w                        io.Writer
	tw                       *tabwriter.Writer
	wide, namespaces, events bool
	// header is the column names of the table being printed, "" before
	// the first row.
	header string
	// showNamespace is decided by the first row: whether the kind is
	// namespaced.
	showNamespace *bool
}

func (t *table) rows(rs []row, eventType string) error {
	if t.tw == nil {
		t.tw = newTabWriter(t.w)
	}
	for _, r := range rs {
		if t.showNamespace == nil {
			show := t.namespaces && r.Namespace != nil
			t.showNamespace = &show
		}
		var names, values []string
		if t.events {
			names, values = append(names, "EVENT"), append(values, eventType)
		}
		names, values = append(names, "CLUSTER"), append(values, r.Cluster)
		if *t.showNamespace {
			ns := ""
			if r.Namespace != nil {
				ns = *r.Namespace
			}
			names, values = append(names, "NAMESPACE"), append(values, ns)
		}
		for _, c := range r.Columns {
			if c.Priority == 0 || t.wide {
				names, values = append(names, strings.ToUpper(c.Name)), append(values, c.Value)
			}
		}
		if h := strings.Join(names, "\t"); h != t.header {
			if t.header != "" {
				if err := t.tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(t.w)
			}
			t.header = h
			fmt.Fprintln(t.tw, h)
		}
		fmt.Fprintln(t.tw, strings.Join(values, "\t"))
	}
	return nil
}

func (t *table) flush() error {
	if t.tw == nil {
		return nil
	}
	return t.tw.Flush()
}

// qualifiedKind is kubectl's name of a kind in -o name: "pod",
// "deployment.apps".
func qualifiedKind(r row) string {
	k := strings.ToLower(r.Kind)
	if _, group, ok := strings.Cut(r.Resource, "."); ok {
		k += "." + group
	}
	return k
}

// names prints -o name: kind/name, as kubectl does (which drops the
// namespace with -A, as this drops the cluster).
type names struct {
	w      io.Writer
	events bool
}

func (n *names) rows(rs []row, eventType string) error {
	for _, r := range rs {
		if n.events {
			fmt.Fprint(n.w, eventType+" ")
		}
		fmt.Fprintf(n.w, "%s/%s\n", qualifiedKind(r), r.Name)
	}
	return nil
}

func (n *names) flush() error { return nil }

// object decodes the row's object and marks it with its cluster.
func object(r row) (map[string]any, error) {
	var obj map[string]any
	if err := json.Unmarshal(r.Object, &obj); err != nil {
		return nil, fmt.Errorf("decode %s %s of %s: %w", r.Resource, r.Name, r.Cluster, err)
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[ClusterAnnotation] = r.Cluster
	return obj, nil
}

// objects prints -o json, -o yaml and -o jsonpath=TEMPLATE: a v1 List of
// the objects, as kubectl prints several (one object alone when a name was
// asked and one cluster has it), then, while watching, each changed
// object; with --output-watch-events every object, listed ones included,
// is a {type, object} event, as kubectl prints it; a template is executed on each of those, as kubectl does.
type objects struct {
	w                   io.Writer
	yaml, watch, events bool
	template            *jsonpath.JSONPath
	// single: a name was asked, so one object prints alone.
	single bool
	items  []any
	listed bool
	// docs counts the YAML documents printed: a watch separates them.
	docs int
}

func (o *objects) rows(rs []row, eventType string) error {
	for _, r := range rs {
		obj, err := object(r)
		if err != nil {
			return err
		}
		if !o.listed && !o.events {
			o.items = append(o.items, obj)
			continue
		}
		var v any = obj
		if o.events {
			// kubectl's --output-watch-events shape: a WatchEvent.
			v = map[string]any{"type": eventType, "object": obj}
		}
		if err := o.print(v); err != nil {
			return err
		}
	}
	return nil
}

func (o *objects) flush() error {
	if o.listed {
		return nil
	}
	o.listed = true
	// With --output-watch-events the listed objects were printed as ADDED
	// events, as kubectl prints them.
	if o.events || (len(o.items) == 0 && o.watch) {
		return nil
	}
	var v any = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": o.items}
	if len(o.items) == 1 && o.single && !o.watch {
		v = o.items[0]
	}
	if o.items == nil {
		v.(map[string]any)["items"] = []any{}
	}
	o.items = nil
	return o.print(v)
}

func (o *objects) print(v any) error {
	if o.template != nil {
		if err := o.template.Execute(o.w, v); err != nil {
			return fmt.Errorf("-o jsonpath: %w", err)
		}
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "    ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if !o.yaml {
		_, err := o.w.Write(buf.Bytes())
		return err
	}
	y, err := yaml.JSONToYAML(buf.Bytes())
	if err != nil {
		return fmt.Errorf("encode YAML: %w", err)
	}
	if o.watch && o.docs > 0 {
		y = append([]byte("---\n"), y...)
	}
	o.docs++
	_, err = o.w.Write(y)
	return err
}

// customColumns prints -o custom-columns=HEADER:PATH,...: CLUSTER first,
// then each path's values in the object (JSONPath, as kubectl takes it:
// ".metadata.name" or "{.metadata.name}"), "<none>" where none.
type customColumns struct {
	w       io.Writer
	tw      *tabwriter.Writer
	headers []string
	paths   []*jsonpath.JSONPath
	events  bool
	printed bool
}

func newCustomColumns(spec string, w io.Writer, events bool) (*customColumns, error) {
	cc := &customColumns{w: w, events: events}
	if spec == "" {
		return nil, usageError("custom-columns needs HEADER:PATH,...")
	}
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok || header == "" || path == "" {
			return nil, usageError(fmt.Sprintf("custom-columns: %q is not HEADER:PATH", part))
		}
		path = strings.TrimSuffix(strings.TrimPrefix(path, "{"), "}")
		if !strings.HasPrefix(path, ".") {
			path = "." + path
		}
		p := jsonpath.New(header).AllowMissingKeys(true)
		if err := p.Parse("{" + path + "}"); err != nil {
			return nil, usageError(fmt.Sprintf("custom-columns: path %q: %v", path, err))
		}
		cc.headers = append(cc.headers, header)
		cc.paths = append(cc.paths, p)
	}
	return cc, nil
}

func (cc *customColumns) rows(rs []row, eventType string) error {
	if cc.tw == nil {
		cc.tw = newTabWriter(cc.w)
	}
	if !cc.printed {
		cc.printed = true
		h := append([]string{"CLUSTER"}, cc.headers...)
		if cc.events {
			h = append([]string{"EVENT"}, h...)
		}
		fmt.Fprintln(cc.tw, strings.Join(h, "\t"))
	}
	for _, r := range rs {
		obj, err := object(r)
		if err != nil {
			return err
		}
		values := []string{r.Cluster}
		if cc.events {
			values = append([]string{eventType}, values...)
		}
		for _, p := range cc.paths {
			values = append(values, cellOf(p, obj))
		}
		fmt.Fprintln(cc.tw, strings.Join(values, "\t"))
	}
	return nil
}

// cellOf is the values p finds in obj, comma-separated, "<none>" for none.
func cellOf(p *jsonpath.JSONPath, obj map[string]any) string {
	results, err := p.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return "<none>"
	}
	var vals []string
	for _, v := range results[0] {
		if !v.IsValid() || (v.Kind() == reflect.Interface && v.IsNil()) {
			continue
		}
		switch x := v.Interface().(type) {
		case string:
			vals = append(vals, x)
		case nil:
		default:
			b, err := json.Marshal(x)
			if err != nil {
				b = []byte(fmt.Sprint(x))
			}
			vals = append(vals, string(b))
		}
	}
	if len(vals) == 0 {
		return "<none>"
	}
	return strings.Join(vals, ",")
}

func (cc *customColumns) flush() error {
	if cc.tw == nil {
		return nil
	}
	return cc.tw.Flush()
}
