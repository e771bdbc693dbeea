package aggregator_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetcache/fleetcache/pkg/aggregator"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// BenchmarkAuthorization measures what authorization adds to a filtered page
// of 50 over 1M objects in 3 clusters: without authentication; with a token
// reviewed by c1 and one SubjectAccessReview per cluster, cached (warm); and
// with every review asked again on each request (cold: caches of 1ns). The
// clusters are the real test servers, registered with a type that holds no
// objects ("nodes"), so the synthetic Pods stay as filled.
func BenchmarkAuthorization(b *testing.B) {
	const size = 1_000_000
	pods := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, c := range env.Clusters() {
		if err := c.Grant(b.Context(), "bob", "", pods); err != nil {
			b.Fatal(err)
		}
	}
	kubeconfig := filepath.Join(b.TempDir(), "members")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		b.Fatal(err)
	}
	members, err := clusters.FromKubeconfig(kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	vars := func(i int) map[string]any {
		return map[string]any{"ns": fmt.Sprintf("ns-%02d", i%benchNamespaces), "sel": fmt.Sprintf("app=web-%d,tier in (fe,be)", i%40)}
	}
	for _, mode := range []struct {
		name string
		auth aggregator.AuthOptions
	}{
		{"authn=none", aggregator.AuthOptions{}},
		{"authz=warm", aggregator.AuthOptions{Authn: aggregator.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()}},
		{"authz=cold", aggregator.AuthOptions{Authn: aggregator.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig(),
			AuthnCacheTTL: time.Nanosecond, AuthzCacheTTL: time.Nanosecond}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			opts := aggregator.Options{Auth: mode.auth, Informers: informers.Options{Resources: []string{"nodes"}}}
			var agg *aggregator.Aggregator
			c := serve(b, opts, func(a *aggregator.Aggregator) {
				agg = a
				fill(a.Index, 3, size)
			})
			if err := agg.Registry.Set(members); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, 1)
			go func() { done <- agg.Start(ctx) }()
			b.Cleanup(func() { cancel(); <-done })
			if mode.auth.Authn != "" {
				c.token = env.Cluster("c1").UserConfig("bob").BearerToken
			}
			// Every answer is the full page: the caller sees all of it.
			for i := range 3 {
				out := c.do(b, pageQuery, vars(i))
				if n := bytes.Count(out, []byte(`"node":`)); n != 50 {
					b.Fatalf("page has %d objects, want 50: %s", n, out)
				}
			}
			i := 0
			measure(b, func() { c.do(b, pageQuery, vars(i)); i++ })
		})
	}
}
