package graphql

import (
	"context"
	"testing"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/fanout"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/feed"
)

// allowAll decides yes to everything.
type allowAll struct{}

func (allowAll) Decide(context.Context, *authn.User, authz.Attributes) (bool, error) {
	return true, nil
}

// BenchmarkEventVisibility measures the access check of one event for one
// subscriber, its decision cached: asked of the Authorizer (authz's, with
// its decision cache), and as a subscription makes it (its memo of the
// Authorizer's answers).
func BenchmarkEventVisibility(b *testing.B) {
	ix := index.New(index.Options{})
	az := authz.New(allowAll{}, authz.Options{})
	s := newServer(b, ix, health.NewTracker(ix, health.Options{}), Options{Authorizer: az})
	u := &authn.User{Name: "alice", UID: "4f1c", Groups: []string{"system:authenticated", "team-a"}, Extra: map[string][]string{"scopes": {"read"}}}
	c := &fanout.Change{Type: feed.Added, Object: version(b, "c1", "ns", "cm", "1", nil)}
	ctx := context.Background()
	b.Run("authorizer", func(b *testing.B) {
		o := c.Object
		for b.Loop() {
			if ok, _, err := az.Visible(ctx, u, o.Cluster, o.Namespace, o.Type.Resource); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("subscription", func(b *testing.B) {
		r := &resourceSub{s: s, visibility: visibility{user: u, authorizer: s.opts.Authorizer}}
		for b.Loop() {
			if !r.visible(ctx, c) {
				b.Fatal("hidden")
			}
		}
	})
}
