package authn

import (
	"errors"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestBearerToken(t *testing.T) {
	for _, tt := range []struct {
		header, want string
		ok           bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer  abc ", "abc", true},
		{"Basic abc", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"", "", false},
	} {
		got, ok := BearerToken(tt.header)
		if got != tt.want || ok != tt.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

// TestTokenReviewCache checks the caching policy against a fake clientset;
// the reviews themselves are tested against a real API server in
// internal/app.
func TestTokenReviewCache(t *testing.T) {
	client := fake.NewClientset()
	reviews := 0
	var fail error
	client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		reviews++
		if fail != nil {
			return true, nil, fail
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if tr.Spec.Token == "good" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"b", "a"}}}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	now := time.Unix(0, 0)
	a := NewTokenReview(client, TokenReviewOptions{TTL: 10 * time.Second, FailureTTL: time.Second, Now: func() time.Time { return now }})

	u, err := a.Authenticate(t.Context(), "good")
	if err != nil || u.Name != "alice" || u.Groups[0] != "a" {
		t.Fatalf("good token: %+v %v", u, err)
	}
	if _, err := a.Authenticate(t.Context(), "bad"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("bad token: %v, want ErrUnauthenticated", err)
	}
	if _, err := a.Authenticate(t.Context(), ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("no token: %v, want ErrUnauthenticated", err)
	}
	_, _ = a.Authenticate(t.Context(), "good")
	_, _ = a.Authenticate(t.Context(), "bad")
	if reviews != 2 {
		t.Errorf("%d reviews, want 2: both answers cached", reviews)
	}
	now = now.Add(2 * time.Second) // past FailureTTL, within TTL
	_, _ = a.Authenticate(t.Context(), "good")
	_, _ = a.Authenticate(t.Context(), "bad")
	if reviews != 3 {
		t.Errorf("%d reviews, want 3: the rejection reviewed again", reviews)
	}
	now = now.Add(time.Minute)
	fail = errors.New("connection refused")
	if _, err := a.Authenticate(t.Context(), "good"); err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Errorf("failed review: %v, want an error other than ErrUnauthenticated", err)
	}
	fail = nil
	if _, err := a.Authenticate(t.Context(), "good"); err != nil {
		t.Errorf("after the failure: %v (failures must not be cached)", err)
	}
}

func TestUserKey(t *testing.T) {
	base := User{Name: "alice", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x"}}}
	same := User{Name: "alice", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x"}}}
	if base.Key() != same.Key() {
		t.Fatalf("equal users have different keys: %q, %q", base.Key(), same.Key())
	}
	others := []struct {
		name string
		user User
	}{
		{name: "name", user: User{Name: "alice2", UID: "1", Groups: []string{"a", "b"}, Extra: base.Extra}},
		{name: "uid", user: User{Name: "alice", UID: "2", Groups: []string{"a", "b"}, Extra: base.Extra}},
		{name: "groups", user: User{Name: "alice", UID: "1", Groups: []string{"a"}, Extra: base.Extra}},
		{name: "group split", user: User{Name: "alice", UID: "1", Groups: []string{"ab"}, Extra: base.Extra}},
		{name: "extra value", user: User{Name: "alice", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"y"}}}},
		{name: "extra key", user: User{Name: "alice", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scope": {"x"}}}},
		{name: "no extra", user: User{Name: "alice", UID: "1", Groups: []string{"a", "b"}}},
		{name: "extra values split", user: User{Name: "alice", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x", ""}}}},
		{name: "name into uid", user: User{Name: "alice1", UID: "", Groups: []string{"a", "b"}, Extra: base.Extra}},
	}
	seen := map[string]string{base.Key(): "base"}
	for _, o := range others {
		k := o.user.Key()
		if prev, ok := seen[k]; ok {
			t.Errorf("%s: key %q equals the key of %s", o.name, k, prev)
		}
		seen[k] = o.name
	}
}
