package authz

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// grants is a Decider that allows the questions it holds, and counts the
// questions asked; fail makes every decision fail.
type grants struct {
	allowed []Attributes
	asked   int
	fail    error
}

func (g *grants) Decide(_ context.Context, _ *authn.User, a Attributes) (bool, error) {
	g.asked++
	if g.fail != nil {
		return false, g.fail
	}
	return slices.Contains(g.allowed, a), nil
}

// TestImpersonate checks how headers become questions and the impersonated
// user, against a fake Decider; the real decisions are tested against a
// real API server in internal/app and pkg/kubeapi.
func TestImpersonate(t *testing.T) {
	imp := func(resource, name string) Attributes {
		return Attributes{Verb: "impersonate", Resource: resource, Name: name}
	}
	d := &grants{allowed: []Attributes{
		imp("users", "bob"), imp("users", "system:anonymous"), imp("groups", "devs"), imp("groups", "system:authenticated"),
		imp("uids.authentication.k8s.io", "b-1"),
		{Verb: "impersonate", Resource: "userextras.authentication.k8s.io", Subresource: "scopes", Name: "view"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "ns", Name: "robot"},
	}}
	im := NewImpersonator(d, Options{})
	alice := &authn.User{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, tt := range []struct {
		name    string
		header  http.Header
		want    *authn.User
		status  int32
		message string
	}{
		{name: "no headers", header: http.Header{}, want: alice},
		{name: "a user", header: http.Header{"Impersonate-User": {"bob"}},
			want: &authn.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "groups, an extra and a UID", header: http.Header{
			"Impersonate-User": {"bob"}, "Impersonate-Group": {"devs"}, "Impersonate-Extra-Scopes": {"view"}, "Impersonate-Uid": {"b-1"}},
			want: &authn.User{Name: "bob", UID: "b-1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"view"}}}},
		{name: "system:authenticated named", header: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:authenticated"}},
			want: &authn.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "anonymous", header: http.Header{"Impersonate-User": {"system:anonymous"}},
			want: &authn.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}},
		{name: "a service account", header: http.Header{"Impersonate-User": {"system:serviceaccount:ns:robot"}},
			want: &authn.User{Name: "system:serviceaccount:ns:robot", Groups: []string{"system:authenticated", "system:serviceaccounts", "system:serviceaccounts:ns"}}},
		{name: "another user", header: http.Header{"Impersonate-User": {"carol"}}, status: http.StatusForbidden,
			message: `users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{name: "another group", header: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"devs", "admins"}}, status: http.StatusForbidden,
			message: `groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`},
		{name: "another extra", header: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"edit"}}, status: http.StatusForbidden,
			message: `userextras.authentication.k8s.io "edit" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope`},
		{name: "another UID", header: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"x"}}, status: http.StatusForbidden,
			message: `uids.authentication.k8s.io "x" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`},
		{name: "another service account", header: http.Header{"Impersonate-User": {"system:serviceaccount:other:robot"}}, status: http.StatusForbidden,
			message: `serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "other"`},
		{name: "a group without a user", header: http.Header{"Impersonate-Group": {"devs"}}, status: http.StatusBadRequest,
			message: `requested group "devs" without impersonating a user`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := im.Impersonate(t.Context(), alice, tt.header)
			if tt.status != 0 {
				var st apierrors.APIStatus
				if !errors.As(err, &st) || st.Status().Code != tt.status || st.Status().Message != tt.message {
					t.Fatalf("got %+v, %v; want %d %q", got, err, tt.status, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("impersonated user (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("decisions are cached", func(t *testing.T) {
		before := d.asked
		for range 3 {
			if _, err := im.Impersonate(t.Context(), alice, http.Header{"Impersonate-User": {"bob"}}); err != nil {
				t.Fatal(err)
			}
		}
		if d.asked != before {
			t.Errorf("%d questions asked again, want none", d.asked-before)
		}
	})
	t.Run("a failed decision refuses", func(t *testing.T) {
		failing := NewImpersonator(&grants{fail: errors.New("connection refused")}, Options{})
		_, err := failing.Impersonate(t.Context(), alice, http.Header{"Impersonate-User": {"bob"}})
		if !apierrors.IsForbidden(err) {
			t.Errorf("got %v, want 403", err)
		}
	})
}

func FuzzImpersonationHeaders(f *testing.F) {
	for _, seed := range [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-A%2Fb", "x"}, {"Impersonate-Group", "g"}, {"Impersonate-Extra-%zz", ""}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		h := http.Header{}
		h.Add(name, value)
		asks, err := impersonations(h)
		if err == nil && len(asks) > 0 && asks[0].kind != "user" && asks[0].kind != "serviceaccount" {
			t.Errorf("asks %+v without a user first", asks)
		}
	})
}
