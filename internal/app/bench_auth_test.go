package app_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/clusters"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// authzNamespaces are the namespaces (of benchNamespaces) where the
// namespaced caller of BenchmarkAuthorization may list Pods, in every cluster.
const authzNamespaces = 10

// BenchmarkAuthorization measures what authorization adds to a page of 50
// over 1M objects in 3 clusters, for two queries: one namespace and a label
// selector (query=namespace), and the label selector across the fleet
// (query=fleet). The modes: without authentication; a caller (bob) who may
// list Pods in every cluster, with a token reviewed by c1 and one
// SubjectAccessReview per cluster, cached (warm) or asked again on each
// request (cold: caches of 1ns); and a caller (carol) who may list Pods in
// 10 of the 50 namespaces of each cluster only, warm: the Authorizer asks
// cluster-wide, is denied, and asks namespace by namespace. Every answer is
// a full page of 50: the queried namespaces are carol's. The clusters are
// the real test servers, registered with a type that holds no objects
// ("nodes"), so the synthetic Pods stay as filled.
//
// Each mode fills an index of its own: run one mode per process (-bench
// 'BenchmarkAuthorization/mode=none/'), so that no mode pays for
// collecting another's garbage, and alternate the processes.
func BenchmarkAuthorization(b *testing.B) {
	env := testbed.Env(b)
	const size = 1_000_000
	pods := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	kubeconfig := filepath.Join(b.TempDir(), "members")
	if err := env.WriteKubeconfig(kubeconfig, "admin"); err != nil {
		b.Fatal(err)
	}
	members, err := clusters.FromKubeconfig(kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	tokenReview := app.AuthOptions{Authn: app.AuthnTokenReview, AuthnConfig: env.Cluster("c1").AdminConfig()}
	cold := tokenReview
	cold.AuthnCacheTTL, cold.AuthzCacheTTL = time.Nanosecond, time.Nanosecond
	for _, mode := range []struct {
		name  string
		auth  app.AuthOptions
		user  string
		grant func(b *testing.B)
	}{
		{"none", app.AuthOptions{}, "", nil},
		{"cluster-wide-warm", tokenReview, "bob", func(b *testing.B) { grantAuthzBench(b, "bob", []string{""}, pods) }},
		{"cluster-wide-cold", cold, "bob", func(b *testing.B) { grantAuthzBench(b, "bob", []string{""}, pods) }},
		{"namespaces-warm", tokenReview, "carol", func(b *testing.B) {
			var namespaces []string
			for i := range authzNamespaces {
				namespaces = append(namespaces, fmt.Sprintf("ns-%02d", i))
			}
			grantAuthzBench(b, "carol", namespaces, pods)
		}},
	} {
		b.Run("mode="+mode.name, func(b *testing.B) {
			if mode.grant != nil {
				mode.grant(b)
			}
			opts := app.Options{Auth: mode.auth, Informers: informers.Options{Resources: []string{"nodes"}}}
			var agg *app.Aggregator
			c := serve(b, opts, func(a *app.Aggregator) {
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
			if mode.user != "" {
				c.token = env.Cluster("c1").UserConfig(mode.user).BearerToken
			}
			for _, q := range []struct {
				name  string
				query string
				vars  func(i int) map[string]any
			}{
				{"namespace", pageQuery, func(i int) map[string]any {
					return map[string]any{"ns": fmt.Sprintf("ns-%02d", i%authzNamespaces), "sel": fmt.Sprintf("app=web-%d,tier in (fe,be)", i%40)}
				}},
				{"fleet", fleetPageQuery, func(i int) map[string]any {
					return map[string]any{"sel": fmt.Sprintf("app=web-%d,tier in (fe,be)", i%40)}
				}},
			} {
				b.Run("query="+q.name, func(b *testing.B) {
					// Every answer is the full page, in the caller's namespaces.
					for i := range 3 {
						out := c.do(b, q.query, q.vars(i))
						if n := bytes.Count(out, []byte(`"node":`)); n != 50 {
							b.Fatalf("page has %d objects, want 50: %s", n, out)
						}
						if mode.user == "carol" {
							for _, m := range regexp.MustCompile(`"namespace":"ns-(\d+)"`).FindAllSubmatch(out, -1) {
								if n, _ := strconv.Atoi(string(m[1])); n >= authzNamespaces {
									b.Fatalf("carol sees namespace ns-%s: %s", m[1], out)
								}
							}
						}
					}
					i := 0
					measure(b, func() { c.do(b, q.query, q.vars(i)); i++ })
				})
			}
		})
	}
}

// fleetPageQuery is pageQuery without the namespace: a label selector
// across every namespace of every cluster.
const fleetPageQuery = `query Page($sel: String!) {
  resources(filter: {labelSelector: $sel}, first: 50) {
    edges { node { cluster namespace name kind labels } }
    pageInfo { hasNextPage endCursor }
  }
}`

// grantAuthzBench gives user the rules in each namespace ("" for
// cluster-wide) of every cluster, creating the namespaces.
func grantAuthzBench(b *testing.B, user string, namespaces []string, rules ...rbacv1.PolicyRule) {
	env := testbed.Env(b)
	for _, c := range env.Clusters() {
		dc := testcluster.Dynamic(b, c.AdminConfig())
		for _, ns := range namespaces {
			if ns != "" {
				testcluster.CreateNamespace(b, dc, ns)
			}
			if err := c.Grant(b.Context(), user, ns, rules...); err != nil {
				b.Fatal(err)
			}
		}
	}
}
