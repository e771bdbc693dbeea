package columns

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Column is one cell of an object's row: the column's name, as the API
// server's Table names it, and the object's value in it, as kubectl prints
// it.
type Column struct {
	Name  string
	Value string
}

// printer returns the columns of a built-in kind after the name, from the
// object's JSON, at time now.
type printer func(raw []byte, now time.Time) ([]Column, error)

// printers are the built-in kinds whose columns are more than the name.
var printers = map[schema.GroupKind]printer{
	{Kind: "Pod"}:                                 printPod,
	{Group: "apps", Kind: "Deployment"}:           printDeployment,
	{Group: "apps", Kind: "ReplicaSet"}:           printReplicaSet,
	{Group: "apps", Kind: "StatefulSet"}:          printStatefulSet,
	{Group: "apps", Kind: "DaemonSet"}:            printDaemonSet,
	{Group: "batch", Kind: "Job"}:                 printJob,
	{Group: "batch", Kind: "CronJob"}:             printCronJob,
	{Kind: "Service"}:                             printService,
	{Group: "networking.k8s.io", Kind: "Ingress"}: printIngress,
	{Kind: "ConfigMap"}:                           printConfigMap,
	{Kind: "Namespace"}:                           printNamespace,
	{Kind: "Node"}:                                printNode,
	{Kind: "PersistentVolumeClaim"}:               printPersistentVolumeClaim,
	{Kind: "PersistentVolume"}:                    printPersistentVolume,
	{Kind: "Event"}:                               printEvent,
	{Group: "events.k8s.io", Kind: "Event"}:       printEvent,
}

// For returns the columns of o at time now, in the server's order: Name
// first (the server's Event has it last), then the kind's columns, without
// the age. Custom resources get the printer columns ts holds for their
// type (see Custom); kinds without a printer, and objects whose JSON does
// not decode as their kind, get the name alone.
func (ts *Types) For(o *object.Object, now time.Time) []Column {
	return ts.forRaw(o, o.Raw(), now)
}

// forRaw is For of o, whose JSON is raw.
func (ts *Types) forRaw(o *object.Object, raw []byte, now time.Time) []Column {
	name := Column{Name: "Name", Value: o.Name}
	printer := ts.Printer(o.Type)
	if c, ok := printer.(*Custom); ok {
		return plain(c.row(name, raw, o.Created(), now, false))
	}
	if o.Type.Kind == "Secret" && o.Type.GVR.Group == "" {
		return printSecret(name, raw, printer == DataNotCached)
	}
	p := printers[schema.GroupKind{Group: o.Type.GVR.Group, Kind: o.Type.Kind}]
	if p == nil {
		return []Column{name}
	}
	cols, err := p(raw, now)
	if err != nil {
		return []Column{name}
	}
	if o.Type.Kind == "Event" {
		return append(cols, name)
	}
	return append([]Column{name}, cols...)
}

// Cell is a column of an object's row with the column's priority in the
// server's Table: 0 for the columns `kubectl get` prints, above 0 for
// those only `kubectl get -o wide` adds.
type Cell struct {
	Column
	Priority int32
}

// layout is how the server's Table of a built-in kind differs from For's
// columns: the columns of priority 1 (only -o wide prints them) and the
// column Age follows. Kinds without a layout have Name and Age, all of
// priority 0, as the server's default Table does.
type layout struct {
	// ageAfter is the column the Age column follows, "" when the Table
	// has none (Events have Last Seen and First Seen instead).
	ageAfter string
	wide     []string
}

// workloadWide are the -o wide columns of the workloads with selectors.
var workloadWide = []string{"Containers", "Images", "Selector"}

// layouts are the Tables of the kinds of printers (and Secret), as
// Kubernetes' printers define their column definitions.
var layouts = map[schema.GroupKind]layout{
	{Kind: "Pod"}:                                 {"Restarts", []string{"IP", "Node", "Nominated Node", "Readiness Gates"}},
	{Group: "apps", Kind: "Deployment"}:           {"Available", workloadWide},
	{Group: "apps", Kind: "ReplicaSet"}:           {"Ready", workloadWide},
	{Group: "apps", Kind: "StatefulSet"}:          {"Ready", []string{"Containers", "Images"}},
	{Group: "apps", Kind: "DaemonSet"}:            {"Node Selector", workloadWide},
	{Group: "batch", Kind: "Job"}:                 {"Duration", workloadWide},
	{Group: "batch", Kind: "CronJob"}:             {"Last Schedule", workloadWide},
	{Kind: "Service"}:                             {"Port(s)", []string{"Selector"}},
	{Group: "networking.k8s.io", Kind: "Ingress"}: {"Ports", nil},
	{Kind: "ConfigMap"}:                           {"Data", nil},
	{Kind: "Secret"}:                              {"Data", nil},
	{Kind: "Namespace"}:                           {"Status", nil},
	{Kind: "Node"}:                                {"Roles", []string{"Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}},
	{Kind: "PersistentVolumeClaim"}:               {"VolumeAttributesClass", []string{"VolumeMode"}},
	{Kind: "PersistentVolume"}:                    {"Reason", []string{"VolumeMode"}},
	{Kind: "Event"}:                               {"", []string{"Subobject", "Source", "First Seen", "Count", "Name"}},
	{Group: "events.k8s.io", Kind: "Event"}:       {"", []string{"Subobject", "Source", "First Seen", "Count", "Name"}},
}

// Row returns the row of o that the member cluster's Table has, at time
// now: For's columns with their priorities, and, if ages is set, the age
// where the server has it (a column "Age", a custom resource's date
// columns at .metadata.creationTimestamp), as the server computes it.
func (ts *Types) Row(o *object.Object, now time.Time, ages bool) []Cell {
	return ts.RowOf(o, o.Raw(), now, ages)
}

// RowOf is Row of o, whose JSON is raw (o.Raw(), or a copy of it that the
// caller decoded into a buffer it reuses): raw is read, not kept.
func (ts *Types) RowOf(o *object.Object, raw []byte, now time.Time, ages bool) []Cell {
	if c, ok := ts.Printer(o.Type).(*Custom); ok {
		return c.row(Column{Name: "Name", Value: o.Name}, raw, o.Created(), now, ages)
	}
	cols := ts.forRaw(o, raw, now)
	l, ok := layouts[schema.GroupKind{Group: o.Type.GVR.Group, Kind: o.Type.Kind}]
	if !ok {
		l.ageAfter = "Name"
	}
	out := make([]Cell, 0, len(cols)+1)
	for _, c := range cols {
		cell := Cell{Column: c}
		if slices.Contains(l.wide, c.Name) {
			cell.Priority = 1
		}
		out = append(out, cell)
		if ages && c.Name == l.ageAfter {
			out = append(out, Cell{Column: Column{Name: "Age", Value: since(o.Created(), now)}})
		}
	}
	return out
}

// plain returns the columns of cells.
func plain(cells []Cell) []Column {
	out := make([]Column, len(cells))
	for i, c := range cells {
		out[i] = c.Column
	}
	return out
}

// dataNotCached is DataNotCached's type.
type dataNotCached struct{}

// DataNotCached, as the printer of core Secrets' type (Types.Set), says that
// their data was dropped before they were stored (see
// informers.Options.CacheSecretData): their Data column is then "<unknown>"
// rather than a count of the keys left, none.
var DataNotCached any = dataNotCached{}

// none is kubectl's text for an empty value.
func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func itoa[T ~int | ~int32 | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// ratio is "ready/total".
func ratio[T ~int | ~int32 | ~int64](a, b T) string { return itoa(a) + "/" + itoa(b) }

// since is the time from t to now as kubectl prints ages ("5m", "3d2h"),
// "<unknown>" for a zero time.
func since(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// mapLabels prints a map selector or node selector ("a=b,c=d", sorted),
// "<none>" when empty.
func mapLabels(m map[string]string) string {
	return labels.FormatLabels(m)
}

// selector prints a label selector the way kubectl's Selector columns do.
func selector(s *metav1.LabelSelector) string {
	return metav1.FormatLabelSelector(s)
}

// podTemplate is what the workload printers read of a Pod template: its
// containers' names and images.
type podTemplate struct {
	names, images []string
}

// fields are the template's at the path of a template (spec.template).
func (t *podTemplate) fields(path string) []field {
	return []field{{path + ".spec.containers.#.name", &t.names}, {path + ".spec.containers.#.image", &t.images}}
}

// containersAndImages are the Containers and Images columns of a
// workload: its template's containers' names and images, comma-separated.
func containersAndImages(t podTemplate) []Column {
	return []Column{{"Containers", strings.Join(t.names, ",")}, {"Images", strings.Join(t.images, ",")}}
}

func decode(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// field is a path into an object's JSON, in gjson's syntax
// ("spec.containers.#.name" is the list of the containers' names), and
// where to decode the value found there.
type field struct {
	path string
	into any
}

// decodeFields decodes the value at each path into its destination,
// leaving those of absent paths as they are. Printers of objects with large
// parts they do not print (a Pod's or a template's containers) use it: the
// bytes outside the paths are skipped, not decoded, which costs a fraction.
func decodeFields(raw []byte, fields ...field) error {
	// A view of raw, not a copy (gjson.GetBytes copies what it finds):
	// values are read from raw by their index.
	text := unsafe.String(unsafe.SliceData(raw), len(raw))
	for _, f := range fields {
		r := gjson.Get(text, f.path)
		if !r.Exists() {
			continue
		}
		// The value's bytes in raw where gjson says where they are; a
		// value it built (a list of "#" paths) is copied.
		b := []byte(nil)
		if r.Index > 0 && r.Index+len(r.Raw) <= len(raw) {
			b = raw[r.Index : r.Index+len(r.Raw)]
		} else {
			b = []byte(r.Raw)
		}
		if err := json.Unmarshal(b, f.into); err != nil {
			return fmt.Errorf("decode %s: %w", f.path, err)
		}
	}
	return nil
}
