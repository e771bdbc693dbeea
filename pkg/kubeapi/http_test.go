package kubeapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetcache/fleetcache/internal/testcluster"
)

// httpClient sends requests to fleetcache as the user admin.
type httpClient struct {
	f      *fleet
	client *http.Client
	token  string
}

func (f *fleet) http(t *testing.T) *httpClient {
	t.Helper()
	client, err := rest.HTTPClientFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: f.ca}})
	if err != nil {
		t.Fatal(err)
	}
	return &httpClient{f: f, client: client, token: f.env.Cluster("c1").AdminConfig().BearerToken}
}

// do sends method path with the Accept header accept and returns the
// response, whose body the test's end closes.
func (c *httpClient) do(t *testing.T, method, path, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, c.f.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// get returns the status, Content-Type and body of a GET.
func (c *httpClient) get(t *testing.T, path, accept string) (int, string, []byte) {
	t.Helper()
	res := c.do(t, http.MethodGet, path, accept)
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), body
}

type list struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	} `json:"items"`
}

// TestProtocol: what clients other than kubectl rely on, request by request.
func TestProtocol(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	const ns = "protocol"
	kube := kubernetes.NewForConfigOrDie(f.env.Cluster("c1").AdminConfig())
	ctx := t.Context()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Namespace: ns}}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := f.http(t)
	base := "/clusters/c1/api/v1/namespaces/" + ns + "/configmaps"
	var all list
	testcluster.Eventually(t, 30*time.Second, "the ConfigMaps cached", func() (bool, string) {
		_, _, body := c.get(t, base, "")
		all = list{}
		err := json.Unmarshal(body, &all)
		return err == nil && len(all.Items) == 12, string(body)
	})

	t.Run("pages", func(t *testing.T) {
		var names []string
		next := ""
		pages := 0
		for {
			status, _, body := c.get(t, base+"?limit=5&continue="+url.QueryEscape(next), "")
			var page list
			if err := json.Unmarshal(body, &page); status != http.StatusOK || err != nil {
				t.Fatalf("page %d: %d %s", pages, status, body)
			}
			if page.Metadata.ResourceVersion != all.Metadata.ResourceVersion {
				t.Errorf("page %d at resourceVersion %s, the list at %s", pages, page.Metadata.ResourceVersion, all.Metadata.ResourceVersion)
			}
			for _, it := range page.Items {
				names = append(names, it.Metadata.Name)
			}
			pages++
			if next = page.Metadata.Continue; next == "" {
				break
			}
		}
		var want []string
		for _, it := range all.Items {
			want = append(want, it.Metadata.Name)
		}
		if pages != 3 || !cmp.Equal(names, want) {
			t.Errorf("%d pages of %v, want 3 of %v", pages, names, want)
		}
	})

	t.Run("resourceVersion", func(t *testing.T) {
		rv, _ := strconv.ParseUint(all.Metadata.ResourceVersion, 10, 64)
		for _, it := range all.Items {
			if n, _ := strconv.ParseUint(it.Metadata.ResourceVersion, 10, 64); n > rv {
				t.Errorf("%s at resourceVersion %d, after the list's %d", it.Metadata.Name, n, rv)
			}
		}
		for _, tt := range []struct {
			query  string
			status int
			reason metav1.StatusReason
		}{
			{"resourceVersion=" + all.Metadata.ResourceVersion + "&resourceVersionMatch=NotOlderThan", http.StatusOK, ""},
			{"resourceVersion=0", http.StatusOK, ""},
			{"resourceVersion=1&resourceVersionMatch=Exact", http.StatusGone, metav1.StatusReasonExpired},
			{"resourceVersion=" + strconv.FormatUint(rv+1_000_000, 10), http.StatusGatewayTimeout, metav1.StatusReasonTimeout},
			{"resourceVersionMatch=NotOlderThan", http.StatusBadRequest, metav1.StatusReasonBadRequest},
			{"watch=true&resourceVersion=1", http.StatusGone, metav1.StatusReasonExpired},
		} {
			status, _, body := c.get(t, base+"?"+tt.query, "")
			var st metav1.Status
			_ = json.Unmarshal(body, &st)
			if status != tt.status || st.Reason != tt.reason {
				t.Errorf("%s: %d %s, want %d %s", tt.query, status, body, tt.status, tt.reason)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			name, method, path, accept string
			status                     int
			reason                     metav1.StatusReason
			message                    string
		}{
			{"field label", "GET", base + "?fieldSelector=data.x%3Dy", "", 400, metav1.StatusReasonBadRequest, "field label not supported: data.x"},
			{"protobuf only", "GET", base, "application/vnd.kubernetes.protobuf", 406, metav1.StatusReasonNotAcceptable, "application/json"},
			{"unknown cluster", "GET", "/clusters/nope/api/v1/pods", "", 404, metav1.StatusReasonNotFound, `cluster "nope" is not in the fleet`},
			{"uncached type", "GET", "/clusters/c1/api/v1/secrets", "", 404, metav1.StatusReasonNotFound, "could not find the requested resource"},
			{"missing object", "GET", base + "/nope", "", 404, metav1.StatusReasonNotFound, `configmaps "nope" not found`},
			{"subresource", "GET", "/clusters/c1/api/v1/namespaces/" + ns + "/pods/x/log", "", 404, metav1.StatusReasonNotFound, ""},
			{"write", "POST", base, "", 405, metav1.StatusReasonMethodNotAllowed, "fleetcache is a read-only cache of cluster"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				res := c.do(t, tt.method, tt.path, tt.accept)
				body, _ := io.ReadAll(res.Body)
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.APIVersion != "v1" {
					t.Errorf("not a Status: %s", body)
				}
				if res.StatusCode != tt.status || int(st.Code) != tt.status || st.Reason != tt.reason || !strings.Contains(st.Message, tt.message) {
					t.Errorf("%d %s, want %d %s with %q", res.StatusCode, body, tt.status, tt.reason, tt.message)
				}
			})
		}
		anonymous := *c
		anonymous.token = ""
		if status, _, body := anonymous.get(t, base, ""); status != http.StatusUnauthorized {
			t.Errorf("without a token: %d %s", status, body)
		}
	})

	t.Run("negotiation", func(t *testing.T) {
		for _, tt := range []struct {
			path, accept, contentType, kind string
		}{
			{base, "application/vnd.kubernetes.protobuf, application/json", "application/json", "ConfigMapList"},
			{base, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "application/json", "Table"},
			{base, "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "application/json", "PartialObjectMetadataList"},
			{"/clusters/c1/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "APIGroupDiscoveryList"},
			{"/clusters/c1/apis", "application/json", "application/json", "APIGroupList"},
			{"/clusters/c1/api/v1", "", "application/json", "APIResourceList"},
		} {
			status, contentType, body := c.get(t, tt.path, tt.accept)
			var v struct{ Kind string }
			_ = json.Unmarshal(body, &v)
			if status != http.StatusOK || contentType != tt.contentType || v.Kind != tt.kind {
				t.Errorf("%s with %q: %d %s %.200s, want %s %s", tt.path, tt.accept, status, contentType, body, tt.contentType, tt.kind)
			}
		}
		_, _, body := c.get(t, "/clusters/c1/api/v1", "")
		var resources metav1.APIResourceList
		if err := json.Unmarshal(body, &resources); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range resources.APIResources {
			names = append(names, r.Name+":"+strings.Join(r.Verbs, ","))
		}
		want := []string{"configmaps:get,list,watch", "namespaces:get,list,watch", "pods:get,list,watch", "services:get,list,watch"}
		if !cmp.Equal(names, want) {
			t.Errorf("core resources: %v, want %v", names, want)
		}
	})

	t.Run("watch", func(t *testing.T) {
		res := c.do(t, http.MethodGet, base+"?watch=true&allowWatchBookmarks=true&resourceVersion="+all.Metadata.ResourceVersion, "")
		events := bufio.NewScanner(res.Body)
		next := func() (string, metav1.ObjectMeta) {
			t.Helper()
			if !events.Scan() {
				t.Fatalf("the watch ended: %v", events.Err())
			}
			var e struct {
				Type   string
				Object struct{ Metadata metav1.ObjectMeta }
			}
			if err := json.Unmarshal(events.Bytes(), &e); err != nil {
				t.Fatalf("%v: %s", err, events.Bytes())
			}
			return e.Type, e.Object.Metadata
		}
		if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-00", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		typ, meta := next()
		if typ != "DELETED" || meta.Name != "cm-00" {
			t.Fatalf("first event %s %s, want DELETED cm-00", typ, meta.Name)
		}
		deletedAt, _ := strconv.ParseUint(meta.ResourceVersion, 10, 64)
		rv, _ := strconv.ParseUint(all.Metadata.ResourceVersion, 10, 64)
		if deletedAt <= rv {
			t.Errorf("DELETED at resourceVersion %d, not after the list's %d", deletedAt, rv)
		}
		// Nothing changes in the namespace: a bookmark comes (every
		// second in the tests) once the stream's clock moves, which
		// another ConfigMap's change makes it do.
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "default"}}
		if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		typ, meta = next()
		if bm, _ := strconv.ParseUint(meta.ResourceVersion, 10, 64); typ != "BOOKMARK" || bm <= deletedAt {
			t.Errorf("then %s at %s, want a BOOKMARK after %d", typ, meta.ResourceVersion, deletedAt)
		}
	})

	t.Run("streaming list", func(t *testing.T) {
		res := c.do(t, http.MethodGet, base+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", "")
		events := bufio.NewScanner(res.Body)
		added := 0
		for events.Scan() {
			var e struct {
				Type   string
				Object struct{ Metadata metav1.ObjectMeta }
			}
			if err := json.Unmarshal(events.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if e.Type == "ADDED" {
				added++
				continue
			}
			if e.Type != "BOOKMARK" || e.Object.Metadata.Annotations[metav1.InitialEventsAnnotationKey] != "true" || added != 11 {
				t.Errorf("after %d ADDED: %s", added, events.Bytes())
			}
			return
		}
		t.Errorf("the watch ended after %d ADDED: %v", added, events.Err())
	})

	t.Run("from now", func(t *testing.T) {
		res := c.do(t, http.MethodGet, base+"?watch=true&sendInitialEvents=false", "")
		later := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns}}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, later, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		events := bufio.NewScanner(res.Body)
		if !events.Scan() {
			t.Fatalf("the watch ended: %v", events.Err())
		}
		var e struct {
			Type   string
			Object struct{ Metadata metav1.ObjectMeta }
		}
		if err := json.Unmarshal(events.Bytes(), &e); err != nil || e.Type != "ADDED" || e.Object.Metadata.Name != "later" {
			t.Errorf("first event %s, want ADDED later (%v)", events.Bytes(), err)
		}
	})
}
