package planner

import (
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// Matcher is a Filter prepared for testing objects one at a time, as the
// followers of the change feed do: Matches(o) reports whether List with
// the same Filter would return o. A Matcher is immutable and safe for
// concurrent use.
type Matcher struct{ q query }

// NewMatcher prepares f for matching. f's Selector is read once, here.
func NewMatcher(f Filter) *Matcher { return &Matcher{q: compile(f)} }

// Matches reports whether o satisfies every constraint of the filter.
func (m *Matcher) Matches(o *object.Object) bool {
	var r object.BodyReader
	return !m.q.nothing && m.q.matches(o, &r)
}
