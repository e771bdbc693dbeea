package planner_test

import (
	"github.com/fleetcache/fleetcache/internal/indextest"
	"github.com/fleetcache/fleetcache/pkg/index"
)

// The shared fixtures of the index packages' tests (internal/indextest),
// under the names the tests use.
var (
	podType           = indextest.PodType
	cmType            = indextest.CMType
	deployType        = indextest.DeployType
	rsType            = indextest.RSType
	nodeType          = indextest.NodeType
	fooPodsType       = indextest.FooPodsType
	obj               = indextest.Obj
	withLabels        = indextest.WithLabels
	withPodStatus     = indextest.WithPodStatus
	withRaw           = indextest.WithRaw
	withRV            = indextest.WithRV
	withUID           = indextest.WithUID
	withOwner         = indextest.WithOwner
	modified          = indextest.Modified
	keys              = indextest.Keys
	summarize         = indextest.Summarize
	mustSelector      = indextest.MustSelector
	mustFields        = indextest.MustFields
	listAll           = indextest.ListAll
	refMatches        = indextest.RefMatches
	randomFleet       = indextest.RandomFleet
	randomFilter      = indextest.RandomFilter
	unindexed         = indextest.Unindexed
	paths             = indextest.Paths
	randomFieldRaw    = indextest.RandomFieldRaw
	fieldIndexOptions = indextest.FieldIndexOptions
	sortFleet         = indextest.SortFleet
	sortKeys          = indextest.SortKeys
	bruteSorted       = indextest.BruteSorted
	listSortedAll     = indextest.ListSortedAll
	cmpSorted         = indextest.CmpSorted
	scale             = indextest.Scale
)

// checkInvariants returns what Verify finds wrong with ix, "" if nothing.
func checkInvariants(ix *index.Index) string {
	if err := ix.Verify(); err != nil {
		return err.Error()
	}
	return ""
}
