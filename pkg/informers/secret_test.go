package informers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/internal/app"
	"github.com/fleetcache/fleetcache/internal/testcluster"
	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/health"
	"github.com/fleetcache/fleetcache/pkg/index"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/informers"
)

// TestSecretData creates a Secret in a real cluster and reads it back
// through the index and the GraphQL API's object field: without
// CacheSecretData its data and stringData never get there, its metadata
// does; with it, the data is cached as the cluster serves it.
func TestSecretData(t *testing.T) {
	env := testbed.Env(t)
	c1 := env.Cluster("c1")
	dc := testcluster.Dynamic(t, c1.AdminConfig())
	testcluster.CreateNamespace(t, dc, "secret-data")
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata":   map[string]any{"namespace": "secret-data", "name": "creds", "labels": map[string]any{"team": "a"}},
		"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("hunter2"))},
		"stringData": map[string]any{"token": "s3cr3t-token"},
	}}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	if _, err := dc.Resource(gvr).Namespace("secret-data").Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the cluster serves: stringData merged into data, base64.
	credentials := []string{
		base64.StdEncoding.EncodeToString([]byte("hunter2")),
		base64.StdEncoding.EncodeToString([]byte("s3cr3t-token")),
	}

	for _, tc := range []struct {
		name      string
		cacheData bool
		// dataColumn is the Secret's Data column: how many keys it has,
		// unknown when its data is not cached.
		dataColumn string
	}{
		{name: "dropped by default", cacheData: false, dataColumn: "<unknown>"},
		{name: "kept with CacheSecretData", cacheData: true, dataColumn: "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions("secrets")
			opts.CacheSecretData = tc.cacheData
			agg, err := app.New(app.Options{Informers: opts})
			if err != nil {
				t.Fatal(err)
			}
			if err := agg.Registry.Add(admin(c1)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- agg.Start(ctx) }()
			srv := httptest.NewServer(agg.Handler)
			t.Cleanup(func() {
				srv.Close()
				cancel()
				if err := <-done; err != nil {
					t.Errorf("aggregator: %v", err)
				}
			})
			testcluster.Eventually(t, 90*time.Second, "c1 synced", func() (bool, string) {
				st, _ := agg.Health.Cluster("c1")
				return st.Status == health.Synced, string(st.Status)
			})

			o := agg.Index.Get(object.Key{Cluster: "c1", Resource: "secrets", Namespace: "secret-data", Name: "creds"})
			if o == nil {
				t.Fatal("the Secret is not in the index")
			}
			wantColumns := []columns.Column{{Name: "Name", Value: "creds"}, {Name: "Type", Value: "Opaque"}, {Name: "Data", Value: tc.dataColumn}}
			if diff := cmp.Diff(wantColumns, agg.Columns.For(o, time.Now())); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			served := graphqlObject(t, srv.URL)
			for what, raw := range map[string][]byte{"index": o.Raw(), "GraphQL object": served} {
				if got := bytes.Contains(raw, []byte(`"data"`)); got != tc.cacheData {
					t.Errorf("%s holds data: %v, want %v: %s", what, got, tc.cacheData, raw)
				}
				// The API server never serves stringData (it merges it into
				// data); TestTransformDropsSecretData covers an object that
				// carries it.
				if bytes.Contains(raw, []byte(`"stringData"`)) {
					t.Errorf("%s holds stringData: %s", what, raw)
				}
				for _, cred := range credentials {
					if got := bytes.Contains(raw, []byte(cred)); got != tc.cacheData {
						t.Errorf("%s holds the credential %q: %v, want %v: %s", what, cred, got, tc.cacheData, raw)
					}
				}
				// The metadata a portal lists Secrets by stays.
				for _, want := range []string{`"name":"creds"`, `"team":"a"`, `"type":"Opaque"`} {
					if !bytes.Contains(raw, []byte(want)) {
						t.Errorf("%s lacks %s: %s", what, want, raw)
					}
				}
			}
		})
	}
}

// graphqlObject returns the object field of Secret secret-data/creds of c1,
// as the GraphQL API at url serves it.
func graphqlObject(t *testing.T, url string) []byte {
	t.Helper()
	query := `{"query":"{ resources(filter: {clusters: [\"c1\"], kinds: [\"Secret\"], namespaces: [\"secret-data\"]}) { edges { node { name object } } } }"}`
	resp, err := http.Post(url+"/graphql", "application/json", strings.NewReader(query))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Data struct {
			Resources struct {
				Edges []struct {
					Node struct {
						Name   string
						Object json.RawMessage
					}
				}
			}
		}
		Errors []any
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) > 0 || len(got.Data.Resources.Edges) != 1 {
		t.Fatalf("want one Secret, got %+v", got)
	}
	return got.Data.Resources.Edges[0].Node.Object
}

// TestSecretsNotCachedByDefault checks that without configured resources
// no Secret reaches the index, though the cluster has some.
func TestSecretsNotCachedByDefault(t *testing.T) {
	env := testbed.Env(t)
	if slices.Contains(informers.DefaultResources, "secrets") {
		t.Fatal("secrets are in DefaultResources")
	}
	c1 := env.Cluster("c1")
	dc := testcluster.Dynamic(t, c1.AdminConfig())
	testcluster.CreateNamespace(t, dc, "secret-default")
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"namespace": "secret-default", "name": "creds"},
		"stringData": map[string]any{"token": "s3cr3t"},
	}}
	if _, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("secret-default").
		Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := testOptions() // no resources: the default set
	f := startFleet(t, index.Options{}, opts, admin(c1))
	waitStatus(t, f, "c1", health.Synced)
	if n := len(f.index.Objects("c1", "configmaps")); n == 0 {
		t.Fatal("no ConfigMap cached: the default set was not used")
	}
	if got := f.index.Objects("c1", "secrets"); len(got) != 0 {
		t.Errorf("%d Secrets cached by default", len(got))
	}
}
