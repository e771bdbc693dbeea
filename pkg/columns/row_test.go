package columns

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// header is a row's column names, "|"-separated, those of priority 1
// marked with "*".
func header(cells []Cell) string {
	var names []string
	for _, c := range cells {
		n := c.Name
		if c.Priority > 0 {
			n += "*"
		}
		names = append(names, n)
	}
	return strings.Join(names, "|")
}

// TestRowHeaders checks each kind's row against the column definitions of
// Kubernetes 1.36's printers (pkg/printers/internalversion): names, order,
// priorities and where the age goes.
func TestRowHeaders(t *testing.T) {
	const wl = "|Containers*|Images*|Selector*"
	tests := []struct {
		group, kind, raw, want string
	}{
		{"", "Pod", `{}`, "Name|Ready|Status|Restarts|Age|IP*|Node*|Nominated Node*|Readiness Gates*"},
		{"apps", "Deployment", `{}`, "Name|Ready|Up-to-date|Available|Age" + wl},
		{"apps", "ReplicaSet", `{}`, "Name|Desired|Current|Ready|Age" + wl},
		{"apps", "StatefulSet", `{}`, "Name|Ready|Age|Containers*|Images*"},
		{"apps", "DaemonSet", `{}`, "Name|Desired|Current|Ready|Up-to-date|Available|Node Selector|Age" + wl},
		{"batch", "Job", `{}`, "Name|Status|Completions|Duration|Age" + wl},
		{"batch", "CronJob", `{}`, "Name|Schedule|Timezone|Suspend|Active|Last Schedule|Age" + wl},
		{"", "Service", `{}`, "Name|Type|Cluster-IP|External-IP|Port(s)|Age|Selector*"},
		{"networking.k8s.io", "Ingress", `{}`, "Name|Class|Hosts|Address|Ports|Age"},
		{"", "ConfigMap", `{}`, "Name|Data|Age"},
		{"", "Secret", `{}`, "Name|Type|Data|Age"},
		{"", "Namespace", `{}`, "Name|Status|Age"},
		{"", "Node", `{}`, "Name|Status|Roles|Age|Version|Internal-IP*|External-IP*|OS-Image*|Kernel-Version*|Container-Runtime*"},
		{"", "PersistentVolumeClaim", `{}`, "Name|Status|Volume|Capacity|Access Modes|StorageClass|VolumeAttributesClass|Age|VolumeMode*"},
		{"", "PersistentVolume", `{}`, "Name|Capacity|Access Modes|Reclaim Policy|Status|Claim|StorageClass|VolumeAttributesClass|Reason|Age|VolumeMode*"},
		{"", "Event", `{}`, "Last Seen|Type|Reason|Object|Subobject*|Source*|Message|First Seen*|Count*|Name*"},
		{"events.k8s.io", "Event", `{}`, "Last Seen|Type|Reason|Object|Subobject*|Source*|Message|First Seen*|Count*|Name*"},
		{"", "ServiceAccount", `{}`, "Name|Age"},
	}
	for _, tc := range tests {
		t.Run(tc.group+"/"+tc.kind, func(t *testing.T) {
			o := testObject(typeOf(tc.group, tc.kind), tc.raw)
			if got := header(testTypes.Row(o, now, true)); got != tc.want {
				t.Errorf("Row with ages:\n got %s\nwant %s", got, tc.want)
			}
			// Without ages, Row is For's columns.
			if diff := cmp.Diff(testTypes.For(o, now), plain(testTypes.Row(o, now, false))); diff != "" {
				t.Errorf("Row without ages differs from For (-For +Row):\n%s", diff)
			}
		})
	}
}

// TestRowAges checks the age's value: the time since creationTimestamp,
// "<unknown>" without one, and a custom resource's date columns.
func TestRowAges(t *testing.T) {
	age := func(cells []Cell, name string) string {
		for _, c := range cells {
			if c.Name == name {
				return c.Value
			}
		}
		return "(none)"
	}
	o := testObject(typeOf("", "ConfigMap"), `{}`)
	if got := age(testTypes.Row(o, now, true), "Age"); got != "<unknown>" {
		t.Errorf("age without creationTimestamp = %q, want <unknown>", got)
	}
	o.SetCreated(now.Add(-26 * time.Hour))
	if got := age(testTypes.Row(o, now, true), "Age"); got != "26h" {
		t.Errorf("age = %q, want 26h", got)
	}

	typ := typeOf("example.com", "Widget")
	c := &Custom{}
	testTypes.Set(typ, c)
	o = testObject(typ, `{"metadata":{"creationTimestamp":"{{ago:3h}}"},"spec":{"color":"blue"}}`)
	o.SetCreated(now.Add(-3 * time.Hour))
	if got := header(testTypes.Row(o, now, true)); got != "Name|Age" {
		t.Errorf("a custom resource without printer columns: %s, want Name|Age, the server's default", got)
	}
	if err := c.Set([]PrinterColumn{{Name: "Created", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		{Name: "Color", Type: "string", JSONPath: ".spec.color", Priority: 1}}); err != nil {
		t.Fatal(err)
	}
	row := testTypes.Row(o, now, true)
	if got := header(row); got != "Name|Created|Color*" {
		t.Errorf("a custom resource's row: %s, want Name|Created|Color*", got)
	}
	if got := age(row, "Created"); got != "3h" {
		t.Errorf("its date column at creationTimestamp = %q, want 3h", got)
	}
	if got := header(testTypes.Row(o, now, false)); got != "Name|Color*" {
		t.Errorf("without ages: %s, want Name|Color*", got)
	}
}
