package fleetctl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestChangesCommand checks kubectl fleet changes: every page asked for,
// the later ones up to the first's revision, printed oldest first as
// kubectl events prints (LAST SEEN first, the object as kind/name), with
// the warning of a truncated history on stderr.
func TestChangesCommand(t *testing.T) {
	// Half an hour ago: printed "30m" whatever the second (under ten
	// minutes, an age shows its seconds, which the RFC 3339 time's cut
	// and the run move by one).
	at := time.Now().Add(-30 * time.Minute).UTC().Format(time.RFC3339)
	change := func(typ, cluster, kind, resource, name, rv string) string {
		return `{"type":"` + typ + `","time":"` + at + `","cursor":"R","resource":{"cluster":"` + cluster + `","namespace":"web","name":"` + name +
			`","kind":"` + kind + `","resource":"` + resource + `","apiVersion":"v1","resourceVersion":"` + rv + `"}}`
	}
	srv := fakeFleet(t, map[string]string{
		"resources { kind resource }": `{"data":{"clusters":[{"resources":[{"kind":"Pod","resource":"pods"},{"kind":"Deployment.apps","resource":"deployments.apps"}]}]}}`,
		"changes(": `{"data":{"changes":{"revision":"R9","truncated":true,"pageInfo":{"hasNextPage":false},"edges":[` +
			change("ADDED", "prod-eu", "Pod", "pods", "web-1", "11") + `,` + change("DELETED", "prod-us", "Deployment", "deployments.apps", "web", "12") + `]}}}`,
	})
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"changes", "-A", "-o", "wide", "--since", "2h", "--server", srv.srv.URL, "--certificate-authority", srv.ca}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := `LAST SEEN   CLUSTER   NAMESPACE   EVENT     OBJECT                TIME                   RESOURCE VERSION
30m         prod-eu   web         ADDED     pod/web-1             ` + at + `   11
30m         prod-us   web         DELETED   deployment.apps/web   ` + at + `   12
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(errOut.String(), "fleetcache keeps fewer changes than --since 2h asks for") {
		t.Errorf("stderr %q: want the truncation warning", errOut.String())
	}
	for _, args := range [][]string{{"changes", "a", "b"}, {"changes", "-o", "name"}, {"get", "pods", "--since", "1h"}} {
		var out, errOut bytes.Buffer
		if code := Main(t.Context(), args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", args, code, errOut.String())
		}
	}
}
