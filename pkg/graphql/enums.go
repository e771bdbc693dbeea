package graphql

import (
	"github.com/graphql-go/graphql"

	"github.com/fleetcache/fleetcache/pkg/graphql/filter"
	"github.com/fleetcache/fleetcache/pkg/graphql/fleet"
)

// graphql-go (v0.8.1) builds an enum's value and name lookups on first use
// and stores them without synchronization, so two requests that serialize
// the same enum for the first time race (clusters { status } from two
// clients at start-up; the race detector reports it). Building them once
// here, before any request, leaves later uses read-only.
func init() {
	for _, e := range []*graphql.Enum{fleet.SyncStatus, filter.FacetKey, eventTypeEnum, filter.Order,
		graphql.TypeKindEnumType, graphql.DirectiveLocationEnumType} {
		for _, v := range e.Values() {
			e.Serialize(v.Value)
			e.ParseValue(v.Name)
		}
	}
}
