package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetcache/fleetcache/internal/ttlcache"
)

// User is an authenticated caller, as the cluster that reviewed its token
// names it.
type User struct {
	Name   string
	UID    string
	Groups []string // sorted
	Extra  map[string][]string
}

// Key identifies the caller for every cache and shared execution: two users
// with the same Key are the same caller to an authorizer, so it covers name,
// UID, groups and every extra value. Each part is length-prefixed, so no
// choice of names makes two different users collide.
func (u *User) Key() string {
	var b strings.Builder
	part := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	part(u.Name)
	part(u.UID)
	b.WriteString(strconv.Itoa(len(u.Groups)))
	b.WriteByte('g')
	for _, g := range u.Groups {
		part(g)
	}
	b.WriteString(strconv.Itoa(len(u.Extra)))
	b.WriteByte('x')
	for _, k := range slices.Sorted(maps.Keys(u.Extra)) {
		part(k)
		b.WriteString(strconv.Itoa(len(u.Extra[k])))
		b.WriteByte('v')
		for _, v := range u.Extra[k] {
			part(v)
		}
	}
	return b.String()
}

// ErrUnauthenticated means the caller sent no token, or the reviewing
// cluster rejected it. Other errors mean the review itself failed.
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticator checks bearer tokens.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*User, error)
}

// BearerToken returns the token of an Authorization header value of the
// form "Bearer <token>" (the scheme is case-insensitive).
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

type userKey struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the User that ctx carries.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}

// TokenReviewOptions configure a TokenReview authenticator. Each field's
// comment states its default, used when the field is zero;
// DefaultTokenReviewOptions returns them all.
type TokenReviewOptions struct {
	// CacheSize bounds the cached reviews. Default 10000.
	CacheSize int
	// TTL is how long an accepted token's review is reused. Default 10s: a
	// revoked token works at most that long after revocation.
	TTL time.Duration
	// FailureTTL is how long a rejected token's review is reused, so that a
	// client repeating a bad token does not cost a review per request.
	// Default 1s.
	FailureTTL time.Duration
	// Timeout bounds one review. Default 5s.
	Timeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// TokenReview authenticates tokens with the TokenReview API of one cluster.
type TokenReview struct {
	client kubernetes.Interface
	opts   TokenReviewOptions
	// cache is keyed by the token's SHA-256, so no token is kept; a nil
	// *User is a cached rejection.
	cache *ttlcache.Cache[[sha256.Size]byte, *User]
}

// DefaultTokenReviewOptions returns the TokenReviewOptions with every
// default filled in: what a zero TokenReviewOptions means. Configuration and
// flags that expose a field read its default from here.
func DefaultTokenReviewOptions() TokenReviewOptions { return TokenReviewOptions{}.withDefaults() }

// withDefaults fills in the defaults of unset fields.
func (o TokenReviewOptions) withDefaults() TokenReviewOptions {
	if o.CacheSize <= 0 {
		o.CacheSize = 10000
	}
	if o.TTL <= 0 {
		o.TTL = 10 * time.Second
	}
	if o.FailureTTL <= 0 {
		o.FailureTTL = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// NewTokenReview returns an Authenticator that reviews tokens through client.
func NewTokenReview(client kubernetes.Interface, opts TokenReviewOptions) *TokenReview {
	opts = opts.withDefaults()
	return &TokenReview{client: client, opts: opts, cache: ttlcache.New[[sha256.Size]byte, *User](opts.CacheSize, opts.TTL, opts.Now)}
}

// Authenticate returns the user of token, ErrUnauthenticated (wrapped, with
// the reason) if the cluster rejects it, or another error if the review
// could not be made.
func (a *TokenReview) Authenticate(ctx context.Context, token string) (*User, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	key := sha256.Sum256([]byte(token))
	if u, ok := a.cache.Get(key); ok {
		if u == nil {
			return nil, fmt.Errorf("%w: token rejected", ErrUnauthenticated)
		}
		return u, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	review, err := a.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	if !review.Status.Authenticated {
		a.cache.AddFor(key, nil, a.opts.FailureTTL)
		reason := "token rejected"
		if review.Status.Error != "" {
			reason += ": " + review.Status.Error
		}
		return nil, fmt.Errorf("%w: %s", ErrUnauthenticated, reason)
	}
	ui := review.Status.User
	u := &User{Name: ui.Username, UID: ui.UID, Groups: slices.Sorted(slices.Values(ui.Groups))}
	if len(ui.Extra) > 0 {
		u.Extra = make(map[string][]string, len(ui.Extra))
		for k, v := range ui.Extra {
			u.Extra[k] = v
		}
	}
	a.cache.Add(key, u)
	return u, nil
}
