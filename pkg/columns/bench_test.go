package columns

import (
	"testing"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// BenchmarkFor prints one object of a few kinds: a Pod with two containers
// and a restart, a Deployment, and a custom resource with five printer
// columns (decoded into a map for JSONPath, as the server does).
func BenchmarkFor(b *testing.B) {
	widget := typeOf("example.com", "Widget")
	c := &Custom{}
	if err := c.Set([]PrinterColumn{{Name: "Color", Type: "string", JSONPath: ".spec.color"}, {Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
		{Name: "Ratio", Type: "number", JSONPath: ".spec.ratio"}, {Name: "On", Type: "boolean", JSONPath: ".spec.on"},
		{Name: "Started", Type: "date", JSONPath: ".status.started"}}); err != nil {
		b.Fatal(err)
	}
	testTypes.Set(widget, c)
	for _, bc := range []struct {
		name string
		typ  *object.Type
		raw  string
	}{
		{"kind=Pod", typeOf("", "Pod"), `{"metadata":{"name":"x","namespace":"web","labels":{"app":"web"}},"spec":{"nodeName":"n1",
			"containers":[{"name":"a","image":"registry.example/a:1","env":[{"name":"MODE","value":"prod"}],"resources":{"requests":{"cpu":"1"}}},
			{"name":"b","image":"registry.example/b:1"}]},"status":{"phase":"Running","podIP":"10.0.0.1",
			"conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[
			{"name":"a","ready":true,"restartCount":2,"image":"registry.example/a:1","state":{"running":{"startedAt":"{{ago:5m}}"}},
			"lastState":{"terminated":{"exitCode":1,"finishedAt":"{{ago:10m}}"}}},
			{"name":"b","ready":true,"image":"registry.example/b:1","state":{"running":{"startedAt":"{{ago:5m}}"}}}]}}`},
		{"kind=Deployment", typeOf("apps", "Deployment"), `{"metadata":{"name":"x"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
			"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1","env":[{"name":"A","value":"1"}]}]}}},
			"status":{"replicas":3,"readyReplicas":3,"updatedReplicas":3,"availableReplicas":3}}`},
		{"kind=Widget", widget, `{"metadata":{"name":"x"},"spec":{"color":"blue","replicas":3,"ratio":0.5,"on":true},"status":{"started":"{{ago:2h}}"}}`},
	} {
		o := testObject(bc.typ, bc.raw)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(testTypes.For(o, now)) < 2 {
					b.Fatal("no columns")
				}
			}
		})
	}
}
