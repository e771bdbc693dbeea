package kubeapi

import (
	"bytes"
	"fmt"
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
	rows  bytes.Buffer
	n     int
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
	cells := tw.cols.Row(o, tw.now, true)
	raw := o.Raw()
	if tw.fleet {
		cells = append([]columns.Cell{{Column: columns.Column{Name: "Cluster", Value: o.Cluster}}}, cells...)
		raw = withCluster(raw, o.Cluster)
	}
	if tw.defs == nil {
		tw.defs = definitions(cells)
	}
	if tw.n > 0 {
		tw.rows.WriteByte(',')
	}
	tw.n++
	tw.rows.WriteString(`{"cells":[`)
	for i, c := range cells {
		if i > 0 {
			tw.rows.WriteByte(',')
		}
		tw.rows.Write(marshal(c.Value))
	}
	tw.rows.WriteString(`]`)
	switch metav1.IncludeObjectPolicy(tw.include) {
	case metav1.IncludeNone:
	case metav1.IncludeObject:
		tw.rows.WriteString(`,"object":`)
		tw.rows.Write(raw)
	default:
		tw.rows.WriteString(`,"object":`)
		tw.rows.Write(partialMetadata(nil, tw.version, raw))
	}
	tw.rows.WriteByte('}')
}

// finish returns the Table, with the list's resourceVersion and continue
// token.
func (tw *tableWriter) finish(rv, next string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":"Table","apiVersion":"meta.k8s.io/%s","metadata":%s`, tw.version, listMeta(rv, next))
	if !tw.noHeaders {
		defs := tw.defs
		if defs == nil {
			defs = []metav1.TableColumnDefinition{}
		}
		b.WriteString(`,"columnDefinitions":`)
		b.Write(marshal(defs))
	}
	b.WriteString(`,"rows":[`)
	b.Write(tw.rows.Bytes())
	b.WriteString("]}\n")
	return b.Bytes()
}

// definitions returns the column definitions of a row's cells: all strings
// (the cells are as kubectl prints them), the first one the name.
func definitions(cells []columns.Cell) []metav1.TableColumnDefinition {
	defs := make([]metav1.TableColumnDefinition, len(cells))
	for i, c := range cells {
		defs[i] = metav1.TableColumnDefinition{Name: c.Name, Type: "string", Priority: c.Priority}
		if c.Name == "Name" {
			defs[i].Format = "name"
		}
	}
	return defs
}
