package fleetctl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPrintClusters checks the clusters table: with -o wide, LABELS comes
// before the free-text MESSAGE, so that a long message pads nothing after
// it, and each type's line leaves LABELS empty.
func TestPrintClusters(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	long := "list pods: Get \"https://10.0.0.1:6443/api/v1/pods?limit=500\": dial tcp 10.0.0.1:6443: connect: connection refused, and much more text that goes on and on"
	cs := []clusterStatus{
		{Name: "prod-us", Status: "DISCONNECTED", CurrentAsOf: ago(9 * time.Second), LastEventTime: ago(time.Minute), ObjectCount: 12,
			Message: &long, Labels: map[string]string{"env": "prod"}},
		{Name: "staging", Status: "SYNCED", CurrentAsOf: ago(0), LastEventTime: ago(2 * time.Second), ObjectCount: 3,
			Labels: map[string]string{"env": "staging"}},
	}
	cs[1].Resources = append(cs[1].Resources, struct {
		Resource    string     `json:"resource"`
		Status      string     `json:"status"`
		ObjectCount int        `json:"objectCount"`
		CurrentAsOf *time.Time `json:"currentAsOf"`
		LastError   *string    `json:"lastError"`
	}{Resource: "pods", Status: "SYNCED", ObjectCount: 3, CurrentAsOf: ago(0)})

	tests := []struct {
		name string
		wide bool
		want string
	}{
		{name: "default", want: `CLUSTER   STATUS         DATA       OBJECTS   LAST CHANGE   MESSAGE
prod-us   DISCONNECTED   stale 9s   12        60s           ` + long + `
staging   SYNCED         current    3         2s            <none>
`},
		{name: "wide", wide: true, want: `CLUSTER   STATUS         DATA       OBJECTS   LAST CHANGE   LABELS        MESSAGE
prod-us   DISCONNECTED   stale 9s   12        60s           env=prod      ` + long + `
staging   SYNCED         current    3         2s            env=staging   <none>
  pods    SYNCED         current    3                                     <none>
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printClusters(&out, cs, tc.wide, now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.HasSuffix(line, " ") {
					t.Errorf("line %q ends in padding", line)
				}
			}
		})
	}
}
