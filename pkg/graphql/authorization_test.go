package graphql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetcache/fleetcache/pkg/authn"
	"github.com/fleetcache/fleetcache/pkg/authz"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/views"
)

// scopesAuthorizer lets a caller list the resources named in its Extra
// "scopes", in every cluster and namespace: a right that depends on Extra
// alone, as an authorizer may make it depend on a token's scopes.
type scopesAuthorizer struct{}

func (scopesAuthorizer) allowed(u *authn.User, resource string) bool {
	return slices.Contains(u.Extra["scopes"], resource)
}

func (a scopesAuthorizer) Scope(_ context.Context, u *authn.User, contents []views.Contents, _ authz.NamespaceLister) authz.Scope {
	s := authz.Scope{Full: true}
	for _, c := range contents {
		for _, r := range c.Resources {
			if a.allowed(u, r.Resource) {
				s.Grants = append(s.Grants, authz.Grant{Cluster: c.Cluster, Resource: r.Resource})
			} else {
				s.Full = false
			}
		}
	}
	return s
}

func (a scopesAuthorizer) Visible(_ context.Context, u *authn.User, _, _, resource string) (bool, time.Duration, error) {
	return a.allowed(u, resource), time.Minute, nil
}

// TestSubscriptionsApartByExtra: two callers who differ only in Extra (the
// same name, UID and groups) may have different rights. Subscribed with the
// same document, they share no execution, and each receives what its own
// rights allow: in which events, and in the events' nested fields.
func TestSubscriptionsApartByExtra(t *testing.T) {
	ix := index.New(index.Options{})
	// The children are cached before their owner: its ADDED event shows
	// them.
	parent := newObject(t, spec{cluster: "c1", typ: cmType, namespace: "web", name: "parent"})
	owned := []*object.Object{parent}
	ix.Upsert(newObject(t, spec{cluster: "c1", typ: cmType, namespace: "web", name: "child-cm", owners: owned}))
	ix.Upsert(newObject(t, spec{cluster: "c1", typ: podType, namespace: "web", name: "child-pod", owners: owned}))

	user := func(scopes ...string) *authn.User {
		return &authn.User{Name: "alice", UID: "4f1c", Groups: []string{"system:authenticated"}, Extra: map[string][]string{"scopes": scopes}}
	}
	s := startServer(t, ix, health.NewTracker(ix, health.Options{}), Options{Authorizer: scopesAuthorizer{}})
	const query = `subscription { resourceEvents { type resource { kind name children { kind name } } } }`
	as := func(u *authn.User) *Subscription {
		sub, res := s.Subscribe(authn.WithUser(t.Context(), u), Request{Query: query})
		if sub == nil {
			t.Fatalf("Subscribe: %+v", res)
		}
		t.Cleanup(sub.Close)
		return sub
	}
	wide, narrow := as(user("configmaps", "pods")), as(user("configmaps"))
	waitFor(t, "both subscriptions in the hub", func() bool { return s.hub.Subscribers() == 2 })
	if fg, eg := s.hub.Groups(); fg != 1 || eg != 2 {
		t.Errorf("%d filter groups and %d execution groups, want 1 and 2: one execution per caller", fg, eg)
	}

	// The parent (its children differ by caller), a Pod (only wide may
	// see it), then a marker both may see.
	ix.Upsert(parent)
	ix.Upsert(newObject(t, spec{cluster: "c1", typ: podType, namespace: "web", name: "pod"}))
	ix.Upsert(newObject(t, spec{cluster: "c1", typ: cmType, namespace: "web", name: "marker"}))
	for _, tt := range []struct {
		name string
		sub  *Subscription
		want []string
	}{
		{"wide", wide, []string{
			"ADDED ConfigMap/parent children [ConfigMap/child-cm Pod/child-pod]",
			"ADDED Pod/pod children []",
			"ADDED ConfigMap/marker children []",
		}},
		{"narrow", narrow, []string{
			"ADDED ConfigMap/parent children [ConfigMap/child-cm]",
			"ADDED ConfigMap/marker children []",
		}},
	} {
		if diff := cmp.Diff(tt.want, eventsUpTo(t, tt.sub, "ADDED ConfigMap/marker children []")); diff != "" {
			t.Errorf("%s's events (-want +got):\n%s", tt.name, diff)
		}
	}
}

// eventsUpTo reads resourceEvents payloads, as "TYPE Kind/name children
// [Kind/name …]", up to marker.
func eventsUpTo(t *testing.T, sub *Subscription, marker string) []string {
	t.Helper()
	type ref struct{ Kind, Name string }
	var out []string
	for {
		res, err := sub.Next(t.Context())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Data   json.RawMessage
			Errors []any
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if res.Extensions["heartbeat"] == true {
			continue
		}
		if len(p.Errors) > 0 {
			t.Fatalf("payload has errors: %+v", p.Errors)
		}
		var d struct {
			ResourceEvents struct {
				Type     string
				Resource struct {
					Kind, Name string
					Children   []ref
				}
			}
		}
		if err := json.Unmarshal(p.Data, &d); err != nil {
			t.Fatalf("decode %s: %v", p.Data, err)
		}
		e := d.ResourceEvents
		children := []string{}
		for _, c := range e.Resource.Children {
			children = append(children, c.Kind+"/"+c.Name)
		}
		out = append(out, e.Type+" "+e.Resource.Kind+"/"+e.Resource.Name+" children "+fmt.Sprint(children))
		if out[len(out)-1] == marker {
			return out
		}
	}
}
