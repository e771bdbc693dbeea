package fleetctl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(s string) *string { return &s }

// podRow is a Pod's row with kubectl's columns, IP and Node only with
// -o wide.
func podRow(cluster, name, status, ip string) row {
	return row{Cluster: cluster, Namespace: ptr("web"), Name: name, Kind: "Pod", Resource: "pods", APIVersion: "v1",
		Columns: []cell{{"Name", name, 0}, {"Ready", "1/1", 0}, {"Status", status, 0}, {"Age", "5m", 0}, {"IP", ip, 1}, {"Nominated Node", "<none>", 1}},
		Object:  json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"web"},"status":{"podIP":"` + ip + `"}}`)}
}

func TestPrinters(t *testing.T) {
	rows := []row{podRow("prod-eu", "web-1", "Running", "10.0.0.1"), podRow("staging", "web-long-name-2", "CrashLoopBackOff", "")}
	tests := []struct {
		name  string
		opts  options
		watch []string // event types of rows printed after the list
		want  string
	}{
		{name: "default", want: `CLUSTER   NAME              READY   STATUS             AGE
prod-eu   web-1             1/1     Running            5m
staging   web-long-name-2   1/1     CrashLoopBackOff   5m
`},
		{name: "wide, all namespaces", opts: options{output: "wide", allNamespaces: true},
			want: `CLUSTER   NAMESPACE   NAME              READY   STATUS             AGE   IP         NOMINATED NODE
prod-eu   web         web-1             1/1     Running            5m    10.0.0.1   <none>
staging   web         web-long-name-2   1/1     CrashLoopBackOff   5m               <none>
`},
		{name: "name", opts: options{output: "name"}, want: "pod/web-1\npod/web-long-name-2\n"},
		{name: "jsonpath", opts: options{output: `jsonpath={range .items[*]}{.metadata.annotations.fleetcache\.io/cluster}/{.metadata.name}{"\n"}{end}`},
			want: "prod-eu/web-1\nstaging/web-long-name-2\n"},
		{name: "custom columns", opts: options{output: "custom-columns=NAME:.metadata.name,IP:{.status.podIP},NODE:spec.nodeName"},
			want: `CLUSTER   NAME              IP         NODE
prod-eu   web-1             10.0.0.1   <none>
staging   web-long-name-2              <none>
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			p, _, err := newPrinter(&tc.opts, &out)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.rows(rows, ""); err != nil {
				t.Fatal(err)
			}
			if err := p.flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestTableNewHeader checks that rows with other columns (a custom
// resource's printer columns differ between clusters) start a new table,
// as kubectl prints several kinds, and that watch events get EVENT first.
// Each event is flushed as it comes, so it is aligned on its own, as
// kubectl's watch rows are.
func TestTableNewHeader(t *testing.T) {
	var out bytes.Buffer
	p, _, err := newPrinter(&options{watchEvents: true, watch: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	a := row{Cluster: "a", Name: "w", Columns: []cell{{"Name", "w", 0}, {"Color", "blue", 0}}}
	b := row{Cluster: "b", Name: "w", Columns: []cell{{"Name", "w", 0}, {"Size", "3", 0}}}
	for _, r := range []row{a, a, b} {
		if err := p.rows([]row{r}, "ADDED"); err != nil {
			t.Fatal(err)
		}
		if err := p.flush(); err != nil {
			t.Fatal(err)
		}
	}
	want := `EVENT   CLUSTER   NAME   COLOR
ADDED   a         w      blue
ADDED   a     w     blue

EVENT   CLUSTER   NAME   SIZE
ADDED   b         w      3
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestObjects checks -o json and -o yaml: a List, or the object alone for
// a name, each object marked with its cluster.
func TestObjects(t *testing.T) {
	one := []row{podRow("prod-eu", "web-1", "Running", "10.0.0.1")}
	var out bytes.Buffer
	p := &objects{w: &out}
	if err := p.rows(one, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string
		Items []struct {
			Metadata struct {
				Name        string
				Annotations map[string]string
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Metadata.Annotations[ClusterAnnotation] != "prod-eu" {
		t.Errorf("not a List of the Pod marked with its cluster:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "\n    \"apiVersion\"") {
		t.Errorf("not indented by four spaces, as kubectl does:\n%s", out.String())
	}

	out.Reset()
	p = &objects{w: &out, yaml: true, single: true}
	if err := p.rows(one, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: v1
kind: Pod
metadata:
  annotations:
    fleetcache.io/cluster: prod-eu
  name: web-1
  namespace: web
status:
  podIP: 10.0.0.1
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("yaml of one named object (-want +got):\n%s", diff)
	}
}

// TestObjectsWatchEvents checks -o json with --output-watch-events: the
// listed objects are ADDED events, as kubectl prints them, not a List.
func TestObjectsWatchEvents(t *testing.T) {
	var out bytes.Buffer
	p := &objects{w: &out, watch: true, events: true}
	if err := p.rows([]row{podRow("prod-eu", "web-1", "Running", "10.0.0.1")}, "ADDED"); err != nil {
		t.Fatal(err)
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	if err := p.rows([]row{podRow("prod-eu", "web-1", "Failed", "10.0.0.1")}, "MODIFIED"); err != nil {
		t.Fatal(err)
	}
	var types []string
	dec := json.NewDecoder(&out)
	for dec.More() {
		var ev struct {
			Type   string
			Object struct{ Metadata struct{ Name string } }
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type+" "+ev.Object.Metadata.Name)
	}
	if diff := cmp.Diff([]string{"ADDED web-1", "MODIFIED web-1"}, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestBadOutput(t *testing.T) {
	for _, o := range []string{"go-template={{.x}}", "jsonpath={.x", "custom-columns=", "custom-columns=NAME", "custom-columns=A:{.a[}"} {
		if _, _, err := newPrinter(&options{output: o}, &bytes.Buffer{}); err == nil {
			t.Errorf("-o %s accepted", o)
		}
	}
}
