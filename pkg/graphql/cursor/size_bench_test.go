package cursor

import (
	"fmt"
	"testing"

	"github.com/fleetcache/fleetcache/pkg/index"
)

// BenchmarkRevisionCursorSize reports the length of a revision cursor
// (base64, as clients hold it) for a filter that selects 1, 100 and 1,000
// clusters of one type, and of five types: the bound docs/design.md
// states. Cluster names are as fleets name them (prod-eu-west-1-0042),
// resourceVersions as a busy etcd has them (nine digits).
func BenchmarkRevisionCursorSize(b *testing.B) {
	resources := []string{"configmaps", "deployments.apps", "pods", "replicasets.apps", "services"} // sorted, as ClocksAt returns them
	for _, clusters := range []int{1, 100, 1000} {
		for _, types := range []int{1, 5} {
			b.Run(fmt.Sprintf("clusters=%d/types=%d", clusters, types), func(b *testing.B) {
				var clocks []index.Clock
				for c := range clusters {
					for _, r := range resources[len(resources)-types:] {
						clocks = append(clocks, index.Clock{
							Stream: index.Stream{Cluster: fmt.Sprintf("prod-eu-west-1-%04d", c), Resource: r},
							RV:     uint64(412_000_000 + 7919*c),
						})
					}
				}
				rev := Revision{Epoch: "0123456789abcdef", Revision: 123456, Clocks: clocks}
				var s string
				for b.Loop() {
					s = EncodeRevision(rev)
				}
				if _, err := DecodeRevision(s); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(s)), "cursor-bytes")
				b.ReportMetric(float64(len(s))/float64(len(clocks)), "bytes/stream")
			})
		}
	}
}
