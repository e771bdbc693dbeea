package columns

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/jsonpath"
)

// PrinterColumn is one of the additionalPrinterColumns of a
// CustomResourceDefinition's version, as the CRD's JSON has it.
type PrinterColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Format   string `json:"format,omitempty"`
	JSONPath string `json:"jsonPath"`
	Priority int32  `json:"priority,omitempty"`
}

// Custom holds the printer columns of one custom resource type of one
// cluster, compiled. pkg/informers makes one per such type, as its
// printer in a Types table, and sets the columns from the cluster's
// CustomResourceDefinition each time it starts the type's informer; For
// prints with the columns set last. A Custom is safe for concurrent use.
type Custom struct {
	cols atomic.Pointer[[]customColumn]
	// mu serializes evaluations: client-go's JSONPath keeps state while it
	// evaluates.
	mu sync.Mutex
}

// customColumn is a printer column with its compiled path.
type customColumn struct {
	PrinterColumn
	path *jsonpath.JSONPath
	// age says the column is the object's age (a date at
	// .metadata.creationTimestamp): For leaves it out, Row keeps it.
	age bool
}

// Set replaces the columns, compiling their paths as the apiextensions
// server does ("{" + path + "}", missing keys allowed). A column that is
// the object's age (a date at .metadata.creationTimestamp) is marked: For
// leaves it out (clients compute ages), Row prints it. If a path does not
// compile, the columns stay as they were and Set fails; the API server
// rejects such CRDs anyway.
func (c *Custom) Set(cols []PrinterColumn) error {
	out := make([]customColumn, 0, len(cols))
	for _, col := range cols {
		p := jsonpath.New(col.Name)
		if err := p.Parse("{" + col.JSONPath + "}"); err != nil {
			return fmt.Errorf("printer column %q: path %q: %w", col.Name, col.JSONPath, err)
		}
		p.AllowMissingKeys(true)
		age := col.Type == "date" && col.JSONPath == ".metadata.creationTimestamp"
		out = append(out, customColumn{PrinterColumn: col, path: p, age: age})
	}
	c.cols.Store(&out)
	return nil
}

// Columns returns the columns set last (with the ages left out), nil
// before any.
func (c *Custom) Columns() []PrinterColumn {
	p := c.cols.Load()
	if p == nil {
		return nil
	}
	out := make([]PrinterColumn, 0, len(*p))
	for _, col := range *p {
		if !col.age {
			out = append(out, col.PrinterColumn)
		}
	}
	return out
}

// row returns name and the printer columns of the object raw, created at
// created, with their priorities; the age columns only if ages is set. A
// column whose path finds nothing, or a value of another type than the
// column's, is "<none>", as kubectl prints the server's null cell. Without
// printer columns the server's Table is Name and Age (the apiextensions
// server's default columns), and so is the row.
func (c *Custom) row(name Column, raw []byte, created, now time.Time, ages bool) []Cell {
	p := c.cols.Load()
	if p == nil || len(*p) == 0 {
		if ages {
			return []Cell{{Column: name}, {Column: Column{Name: "Age", Value: since(created, now)}}}
		}
		return []Cell{{Column: name}}
	}
	out := make([]Cell, 1, 1+len(*p))
	out[0] = Cell{Column: name}
	// JSONPath evaluates over maps, with integers as int64, as the
	// server's unstructured objects hold them.
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return out
	}
	var buf bytes.Buffer
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, col := range *p {
		if col.age && !ages {
			continue
		}
		out = append(out, Cell{Column: Column{Name: col.Name, Value: col.cell(obj, &buf, now)}, Priority: col.Priority})
	}
	return out
}

// cell evaluates the column's path in obj and formats the first value
// found by the column's type.
func (col *customColumn) cell(obj map[string]any, buf *bytes.Buffer, now time.Time) string {
	results, err := col.path.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return "<none>"
	}
	found := results[0][0]
	switch v := found.Interface().(type) {
	case nil:
		return "<none>"
	case string:
		switch col.Type {
		case "string":
			return v
		case "date":
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(v); err != nil {
				return "<invalid>"
			}
			return since(t.Time, now)
		}
	case int64:
		switch col.Type {
		case "integer":
			return strconv.FormatInt(v, 10)
		case "number":
			return strconv.FormatFloat(float64(v), 'g', -1, 64)
		}
	case float64:
		switch col.Type {
		case "integer":
			return strconv.FormatInt(int64(v), 10)
		case "number":
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
	case bool:
		if col.Type == "boolean" {
			return strconv.FormatBool(v)
		}
	}
	if col.Type == "string" {
		// Anything else, printed by the path as kubectl's templates do.
		buf.Reset()
		if err := col.path.PrintResults(buf, results[0][:1]); err == nil {
			return buf.String()
		}
	}
	return "<none>"
}
