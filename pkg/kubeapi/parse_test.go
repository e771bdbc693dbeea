package kubeapi

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetcache/fleetcache/pkg/index/object"
)

var podsType = apiType{gv: schema.GroupVersion{Version: "v1"}, res: metav1.APIResource{Name: "pods", Kind: "Pod"}, name: "pods"}

// TestParseFields: the API server's field selectors in fleetcache's form,
// with its meaning of empty values and absent booleans, and 400 for fields
// the member does not accept and fleetcache does not index.
func TestParseFields(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
		indexed        []string
		err            bool
	}{
		{name: "empty", in: "", want: ""},
		{name: "equal", in: "spec.nodeName=n1", want: "spec.nodeName=n1"},
		{name: "double equal and not", in: "status.phase==Running,metadata.name!=a", want: "metadata.name!=a,status.phase=Running"},
		{name: "empty value", in: "spec.nodeName=", want: "!spec.nodeName"},
		{name: "not empty", in: "spec.nodeName!=", want: "spec.nodeName"},
		{name: "boolean false", in: "spec.hostNetwork=false", want: "spec.hostNetwork!=true"},
		{name: "renamed", in: "status.podIPs=10.0.0.1", want: "status.podIPs[].ip=10.0.0.1"},
		{name: "escaped", in: `metadata.name=a\,b`, want: `metadata.name=a\,b`},
		{name: "indexed", in: "spec.priority=3", indexed: []string{"spec.priority"}, want: "spec.priority=3"},
		{name: "unsupported", in: "spec.priority=3", err: true},
		{name: "syntax", in: "a=b=c,", err: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFields(podsType, tt.in, tt.indexed)
			if (err != nil) != tt.err {
				t.Fatalf("parseFields(%q) = %v, %v", tt.in, got, err)
			}
			if err == nil && got.String() != tt.want {
				t.Errorf("parseFields(%q) = %q, want %q", tt.in, got.String(), tt.want)
			}
		})
	}
}

// TestNegotiate: the first form the client accepts that the server offers.
func TestNegotiate(t *testing.T) {
	for _, tt := range []struct {
		accept string
		want   form
		ok     bool
	}{
		{"", form{kind: formObject}, true},
		{"*/*", form{kind: formObject}, true},
		{"application/vnd.kubernetes.protobuf", form{}, false},
		{"application/vnd.kubernetes.protobuf,application/json", form{kind: formObject}, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", form{kind: formTable, version: "v1"}, true},
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/json", form{kind: formObject}, true},
		{"application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io", form{kind: formMetadata, version: "v1beta1"}, true},
		{"application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io", form{kind: formTable, version: "v1"}, true},
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", form{}, false},
	} {
		got, ok := negotiate(tt.accept, formTable, formMetadata)
		if got != tt.want || ok != tt.ok {
			t.Errorf("negotiate(%q) = %+v, %v, want %+v, %v", tt.accept, got, ok, tt.want, tt.ok)
		}
	}
}

func TestWithResourceVersion(t *testing.T) {
	in := []byte(`{"kind":"Pod","metadata":{"name":"a","resourceVersion":"12","uid":"u"},"spec":{"x":{"resourceVersion":"1"}}}`)
	want := `{"kind":"Pod","metadata":{"name":"a","resourceVersion":"40","uid":"u"},"spec":{"x":{"resourceVersion":"1"}}}`
	if got := string(withResourceVersion(in, "40")); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if got := string(withResourceVersion([]byte(`{"metadata":{}}`), "40")); got != `{"metadata":{}}` {
		t.Errorf("without a resourceVersion: %s", got)
	}
}

// FuzzParseFields: any field selector is parsed or refused, never a panic,
// and what is parsed prints as a selector that parses back.
func FuzzParseFields(f *testing.F) {
	for _, s := range []string{"", "spec.nodeName=n1", "status.phase!=Running,metadata.name=a", `metadata.name=a\,b`, "spec.hostNetwork=false", "x=", "=", "a==b==c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := parseFields(podsType, s, []string{"spec.priority"})
		if err != nil {
			return
		}
		if _, err := parseFields(podsType, "", nil); err != nil {
			t.Fatal(err)
		}
		_ = sel.String()
	})
}

// FuzzContinue: any continue token decodes or is a 400, and tokens round
// trip.
func FuzzContinue(f *testing.F) {
	f.Add(encodeContinue(continueToken{RV: "12", After: object.Position{Cluster: "c1", Namespace: "ns", Name: "a", Kind: "Pod", Resource: "pods"}}))
	f.Add("")
	f.Add("eyJydiI6IiJ9")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := decodeContinue(s)
		if err != nil {
			return
		}
		back, err := decodeContinue(encodeContinue(tok))
		if err != nil || back != tok {
			t.Fatalf("%+v round trips to %+v, %v", tok, back, err)
		}
	})
}
