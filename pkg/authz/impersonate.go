package authz

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/authn"
)

// The headers that ask to act as another user, as kube-apiserver reads them.
const (
	HeaderImpersonateUser        = authenticationv1.ImpersonateUserHeader
	HeaderImpersonateGroup       = authenticationv1.ImpersonateGroupHeader
	HeaderImpersonateUID         = authenticationv1.ImpersonateUIDHeader
	HeaderImpersonateExtraPrefix = authenticationv1.ImpersonateUserExtraHeaderPrefix
)

// Groups that impersonation adds, as kube-apiserver adds them.
const (
	groupAuthenticated   = "system:authenticated"
	groupUnauthenticated = "system:unauthenticated"
	userAnonymous        = "system:anonymous"
	serviceAccountPrefix = "system:serviceaccount:"
)

// Impersonator lets a caller act as another user, as kube-apiserver's
// impersonation filter does: the caller names the user in the
// Impersonate-User, Impersonate-Group, Impersonate-Uid and
// Impersonate-Extra-<key> headers, and must be allowed the verb impersonate
// on each: users (or serviceaccounts, in their namespace, for a service
// account's name), groups, uids and userextras/<key> (the last two in the
// group authentication.k8s.io), each by name. Its Decider asks the cluster
// that reviews tokens; its Authorizer caches the answers as every decision
// is cached (Options.TTL).
type Impersonator struct {
	az *Authorizer
}

// NewImpersonator returns an Impersonator that asks d, caching its answers
// as opts say.
func NewImpersonator(d Decider, opts Options) *Impersonator {
	return &Impersonator{az: New(d, opts)}
}

// Requested reports whether h asks to impersonate anyone.
func Requested(h http.Header) bool {
	for name := range h {
		if strings.HasPrefix(name, "Impersonate-") {
			return true
		}
	}
	return false
}

// impersonation is one thing a request asks to act as, and the question
// that allows it.
type impersonation struct {
	kind string // user, serviceaccount, group, extra, uid
	a    Attributes
	// key is the extra's key.
	key string
}

// Impersonate returns whom a request of caller with headers h acts as:
// caller when h asks for no one; else the user h names, once caller may
// impersonate each part of it. The impersonated user's groups are those
// named, with system:authenticated added (system:unauthenticated for
// system:anonymous), and a service account's two groups when none are
// named, as kube-apiserver builds them. A refusal is an
// *apierrors.StatusError with the API server's words: 400 for groups,
// extras or a UID without a user, 403 naming the first part the caller may
// not impersonate (also when the decision failed: nobody is impersonated by
// default).
func (im *Impersonator) Impersonate(ctx context.Context, caller *authn.User, h http.Header) (*authn.User, error) {
	asks, err := impersonations(h)
	if err != nil || len(asks) == 0 {
		return caller, err
	}
	u := &authn.User{}
	groupsNamed := len(h.Values(HeaderImpersonateGroup)) > 0
	for _, ask := range asks {
		ok, err := im.az.Allowed(ctx, caller, ask.a)
		if err != nil || !ok {
			return nil, forbiddenImpersonation(caller, ask.a, err)
		}
		switch ask.kind {
		case "serviceaccount":
			u.Name = serviceAccountPrefix + ask.a.Namespace + ":" + ask.a.Name
			if !groupsNamed {
				u.Groups = append(u.Groups, "system:serviceaccounts", "system:serviceaccounts:"+ask.a.Namespace)
			}
		case "user":
			u.Name = ask.a.Name
		case "group":
			u.Groups = append(u.Groups, ask.a.Name)
		case "extra":
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[ask.key] = append(u.Extra[ask.key], ask.a.Name)
		case "uid":
			u.UID = ask.a.Name
		}
	}
	switch {
	case u.Name == userAnonymous && !slices.Contains(u.Groups, groupUnauthenticated):
		u.Groups = append(u.Groups, groupUnauthenticated)
	case u.Name != userAnonymous && !slices.Contains(u.Groups, groupAuthenticated) && !slices.Contains(u.Groups, groupUnauthenticated):
		u.Groups = append(u.Groups, groupAuthenticated)
	}
	slices.Sort(u.Groups)
	u.Groups = slices.Compact(u.Groups)
	return u, nil
}

// impersonations returns what h asks to impersonate, in kube-apiserver's
// order: the user, the groups, the extras (by key), the UID.
func impersonations(h http.Header) ([]impersonation, error) {
	var asks []impersonation
	user := h.Get(HeaderImpersonateUser)
	if user != "" {
		if ns, name, ok := splitServiceAccount(user); ok {
			asks = append(asks, impersonation{kind: "serviceaccount", a: Attributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: name}})
		} else {
			asks = append(asks, impersonation{kind: "user", a: Attributes{Verb: "impersonate", Resource: "users", Name: user}})
		}
	}
	for _, g := range h.Values(HeaderImpersonateGroup) {
		asks = append(asks, impersonation{kind: "group", a: Attributes{Verb: "impersonate", Resource: "groups", Name: g}})
	}
	for _, name := range slices.Sorted(maps.Keys(h)) {
		encoded, ok := strings.CutPrefix(name, HeaderImpersonateExtraPrefix)
		if !ok {
			continue
		}
		key := strings.ToLower(encoded)
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
		for _, v := range h[name] {
			asks = append(asks, impersonation{kind: "extra", key: key, a: Attributes{
				Verb: "impersonate", Resource: "userextras." + authenticationv1.GroupName, Subresource: key, Name: v,
			}})
		}
	}
	if uid := h.Get(HeaderImpersonateUID); uid != "" {
		asks = append(asks, impersonation{kind: "uid", a: Attributes{Verb: "impersonate", Resource: "uids." + authenticationv1.GroupName, Name: uid}})
	}
	if user == "" && len(asks) > 0 {
		var parts []string
		for _, a := range asks {
			parts = append(parts, a.kind+" "+strconv.Quote(a.a.Name))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %s without impersonating a user", strings.Join(parts, ", ")))
	}
	return asks, nil
}

// splitServiceAccount splits system:serviceaccount:<namespace>:<name>.
func splitServiceAccount(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// forbiddenImpersonation is the API server's 403 for a denied part a:
// `users "bob" is forbidden: User "alice" cannot impersonate resource
// "users" in API group "" at the cluster scope`.
func forbiddenImpersonation(caller *authn.User, a Attributes, failed error) error {
	resource, group, _ := strings.Cut(a.Resource, ".")
	shown := resource
	if a.Subresource != "" {
		shown += "/" + a.Subresource
	}
	scope := "at the cluster scope"
	if a.Namespace != "" {
		scope = fmt.Sprintf("in the namespace %q", a.Namespace)
	}
	msg := fmt.Sprintf("User %q cannot impersonate resource %q in API group %q %s", caller.Name, shown, group, scope)
	if failed != nil {
		msg += ": the access review failed"
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, a.Name, errors.New(msg))
	if failed != nil {
		// The cause, for the log; the caller sees the Status only.
		return fmt.Errorf("%w: %w", forbidden, failed)
	}
	return forbidden
}
