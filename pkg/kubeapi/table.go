package kubeapi

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// A Table is what `kubectl get` prints: the columns of the member's own
// Table for the type (package columns computes them from the stored
// objects as the member's printers do, ages included), with each row's
// object as the request's includeObject asks: its metadata by default.

// tableWriter builds one Table.
type tableWriter struct {
	version   string
	include   string // None, Metadata or Object
	noHeaders bool
	// fleet adds a Cluster column first and annotates the objects.
	fleet bool
	now   time.Time
	cols  *columns.Types
	defs  []metav1.TableColumnDefinition
	rows  []byte
	n     int
	// expect is how many rows the Table will have, when known: the rows'
	// buffer is sized after the first one.
	expect int
	// body decodes each row's object once, into buffers reused from row
	// to row.
	body object.BodyReader
}

func (s *Server) newTable(req *request, f form) *tableWriter {
	include := req.query.Get("includeObject")
	if include == "" {
		include = string(metav1.IncludeMetadata)
	}
	return &tableWriter{version: f.version, include: include, now: time.Now(), cols: s.opts.Columns, fleet: req.cluster == ""}
}

// add adds o's row; the first row's cells define the columns.
func (tw *tableWriter) add(o *object.Object) {
	raw := tw.body.Raw(o)
	cells := tw.cols.RowOf(o, raw, tw.now, true)
	cluster := "" // the annotation of the fleet's objects
	if tw.fleet {
		cluster = o.Cluster
	}
	if tw.defs == nil {
		tw.defs = definitions(cells, tw.fleet)
	}
	if tw.n > 0 {
		tw.rows = append(tw.rows, ',')
	}
	tw.n++
	tw.rows = append(tw.rows, `{"cells":[`...)
	if tw.fleet {
		tw.rows = appendJSONString(tw.rows, o.Cluster)
	}
	for i, c := range cells {
		if i > 0 || tw.fleet {
			tw.rows = append(tw.rows, ',')
		}
		tw.rows = appendJSONString(tw.rows, c.Value)
	}
	tw.rows = append(tw.rows, ']')
	switch metav1.IncludeObjectPolicy(tw.include) {
	case metav1.IncludeNone:
	case metav1.IncludeObject:
		tw.rows = append(tw.rows, `,"object":`...)
		if tw.fleet {
			tw.rows = appendWithCluster(tw.rows, raw, cluster)
		} else {
			tw.rows = append(tw.rows, raw...)
		}
	default:
		tw.rows = append(tw.rows, `,"object":`...)
		tw.rows = partialMetadata(tw.rows, tw.version, raw, cluster)
	}
	tw.rows = append(tw.rows, '}')
	if tw.n == 1 && tw.expect > 1 {
		// Room for the rows to come, if they are like the first.
		tw.rows = slices.Grow(tw.rows, len(tw.rows)*(tw.expect-1)*9/8)
	}
}

// parts returns the Table, with the list's resourceVersion and continue
// token, in three parts: what precedes the rows, the rows, and what
// follows them. A list writes them in turn, not copying the rows.
func (tw *tableWriter) parts(rv, next string) (head, rows, tail []byte) {
	head = fmt.Appendf(nil, `{"kind":"Table","apiVersion":"meta.k8s.io/%s","metadata":%s`, tw.version, listMeta(rv, next))
	if !tw.noHeaders {
		defs := tw.defs
		if defs == nil {
			defs = []metav1.TableColumnDefinition{}
		}
		head = append(head, `,"columnDefinitions":`...)
		head = append(head, marshal(defs)...)
	}
	return append(head, `,"rows":[`...), tw.rows, []byte("]}\n")
}

// finish returns the Table in one piece (see parts).
func (tw *tableWriter) finish(rv, next string) []byte {
	return slices.Concat(tw.parts(rv, next))
}

// definitions returns the column definitions of a row's cells, after a
// Cluster column on the fleet's API: all strings (the cells are as kubectl
// prints them), the first one the name.
func definitions(cells []columns.Cell, fleet bool) []metav1.TableColumnDefinition {
	defs := make([]metav1.TableColumnDefinition, 0, len(cells)+1)
	if fleet {
		defs = append(defs, metav1.TableColumnDefinition{Name: "Cluster", Type: "string"})
	}
	for _, c := range cells {
		d := metav1.TableColumnDefinition{Name: c.Name, Type: "string", Priority: c.Priority}
		if c.Name == "Name" {
			d.Format = "name"
		}
		defs = append(defs, d)
	}
	return defs
}
