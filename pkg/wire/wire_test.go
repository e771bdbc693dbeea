package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unique"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetcache/fleetcache/pkg/index/fieldpath"
	"github.com/fleetcache/fleetcache/pkg/index/object"
	"github.com/fleetcache/fleetcache/pkg/index/search"
)

var (
	podType    = &object.Type{Resource: "pods", GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	secretType = &object.Type{Resource: "secrets", GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}
	deployType = &object.Type{Resource: "deployments.apps", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
)

func TestObject(t *testing.T) {
	for _, tc := range []struct {
		name     string
		t        *object.Type
		dropData bool
		in, want string
	}{
		{"managedFields and last-applied go, the rest stays in order", podType, false,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"kubectl","fieldsV1":{"f:x":{}}}],"annotations":{"x":"1","` + LastApplied + `":"{\"a\":1}","y":"2"},"labels":{"b":"2","a":"1"}},"spec":{"z":1,"a":[1,2]}}`,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","annotations":{"x":"1","y":"2"},"labels":{"b":"2","a":"1"}},"spec":{"z":1,"a":[1,2]}}`},
		{"annotations left empty go", podType, false,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"annotations":{"` + LastApplied + `":"{}"},"name":"a"}}`,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}`},
		{"empty annotations go", podType, false,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"annotations":{},"name":"a"}}`,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}`},
		{"managedFields first and last", podType, false,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"managedFields":[],"name":"a","managedFields":null}}`,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}`},
		{"a list item gets kind and apiVersion", deployType, false,
			`{"metadata":{"name":"a"},"spec":{}}`,
			`{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"a"},"spec":{}}`},
		{"an empty object gets kind and apiVersion", podType, false,
			`{}`, `{"kind":"Pod","apiVersion":"v1"}`},
		{"whitespace is compacted, strings kept", podType, false,
			"{ \"kind\" : \"Pod\",\n \"apiVersion\":\"v1\", \"metadata\" : { \"name\" : \"a b\" , \"labels\": { \"k\" : \"v\" } },\n\t\"spec\": { \"s\": [ 1 , \"x y\" , true ] } }\n",
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a b","labels":{"k":"v"}},"spec":{"s":[1,"x y",true]}}`},
		{"escapes are kept as sent", podType, false,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","annotations":{"n":"\u003cb\u003e \"q\" \u2028 é"}}}`,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","annotations":{"n":"\u003cb\u003e \"q\" \u2028 é"}}}`},
		{"an escaped key is read by its text", podType, false,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","managed\u0046ields":[1]}}`,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}`},
		{"a Secret's data goes when asked", secretType, true,
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"data":{"k":"dg=="},"stringData":{"s":"v"},"type":"Opaque"}`,
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"type":"Opaque"}`},
		{"a Secret's data stays otherwise", secretType, false,
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"data":{"k":"dg=="}}`,
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"data":{"k":"dg=="}}`},
		{"data below the top stays", secretType, true,
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","labels":{"data":"x"}},"spec":{"data":1}}`,
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","labels":{"data":"x"}},"spec":{"data":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := NewDecoder("c1", tc.t, tc.dropData).Object([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(o.Raw())); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
			if !json.Valid(o.Raw()) {
				t.Errorf("stored invalid JSON %s", o.Raw())
			}
		})
	}
}

func TestObjectMeta(t *testing.T) {
	in := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-1","namespace":"prod","uid":"u-1","resourceVersion":"42",` +
		`"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"tier":"fe","app":"w\u0065b"},` +
		`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-1","controller":true,"blockOwnerDeletion":true},{"apiVersion":"v1","kind":"Node","name":"n","uid":"n-1"}]}}`
	o, err := NewDecoder("c1", podType, false).Object([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := object.Meta{Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion, Labels: o.Labels, Owners: o.Owners, Created: o.Created()}
	want := object.Meta{Namespace: "prod", Name: "web-1", UID: "u-1", ResourceVersion: "42",
		Labels:  object.Labels{{Key: "app", Value: "web"}, {Key: "tier", Value: "fe"}},
		Owners:  []object.OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-1", Controller: true}, {APIVersion: "v1", Kind: "Node", Name: "n", UID: "n-1"}},
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if o.Cluster != "c1" || o.Type != podType {
		t.Errorf("cluster %q, type %v", o.Cluster, o.Type)
	}
}

// TestChanged reads the newest managedFields time, and forgets it with
// the next object.
func TestChanged(t *testing.T) {
	d := NewDecoder("c1", podType, false)
	in := `{"metadata":{"name":"a","managedFields":[` +
		`{"manager":"kubectl","operation":"Update","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:time":{}}}}},` +
		`{"manager":"ctl","operation":"Apply","time":"2026-01-02T03:09:00Z","fieldsV1":{"f:data":{"f:time":{}}}},` +
		`{"manager":"old","time":"2025-12-31T00:00:00Z"}]}}`
	o, err := d.Object([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := o.Changed, time.Date(2026, 1, 2, 3, 9, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Changed = %v, want %v", got, want)
	}
	if o, err = d.Object([]byte(`{"metadata":{"name":"b"}}`)); err != nil {
		t.Fatal(err)
	}
	if !o.Changed.IsZero() {
		t.Errorf("Changed of an object without managedFields = %v, want zero", o.Changed)
	}
}

func TestObjectErrors(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":{"b":1]}`,
		`{"a":tru}`, `{"a":"x\q"}`, `{"a":"\u12"}`, `{"a":1}x`, `{"a":-}`, `{"metadata":{"labels":{"a":1}}}`,
		`{"metadata":{"creationTimestamp":"yesterday"}}`, `{"metadata":{"name":"a"`, `{"a":[[[`,
	} {
		if o, err := NewDecoder("c1", podType, false).Object([]byte(in)); err == nil {
			t.Errorf("%q: decoded to %s, want an error", in, o.Raw())
		}
	}
}

func TestList(t *testing.T) {
	in := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"77","continue":"tok\u0065n","remainingItemCount":3},` +
		`"items":[{"metadata":{"name":"a","namespace":"n","managedFields":[]}},{"metadata":{"name":"b","namespace":"n"},"spec":{}}]}` + "\n"
	list, err := NewDecoder("c1", podType, false).List([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if list.ResourceVersion != "77" || list.Continue != "token" {
		t.Errorf("resourceVersion %q, continue %q", list.ResourceVersion, list.Continue)
	}
	var got []string
	for _, item := range list.Items {
		got = append(got, string(item.(*Decoded).Raw()))
	}
	want := []string{`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n"}}`,
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"n"},"spec":{}}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	empty, err := NewDecoder("c1", podType, false).List([]byte(`{"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]}`))
	if err != nil || len(empty.Items) != 0 || empty.ResourceVersion != "5" {
		t.Errorf("empty list: %+v, %v", empty, err)
	}
}

// TestListKeepsEachBody checks that the bytes a Decoder reuses for each
// object never end up in an object that keeps them uncompressed (a type
// without a Codec, or before it trained): each item a shorter one after
// a longer one, so that the buffer is reused, not grown.
func TestListKeepsEachBody(t *testing.T) {
	in := `{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[` +
		`{"metadata":{"name":"long-name","namespace":"n"},"spec":{"nodeName":"node-1"}},` +
		`{"metadata":{"name":"mid","namespace":"n"},"spec":{}},` +
		`{"metadata":{"name":"a","namespace":"n"}}]}`
	list, err := NewDecoder("c1", podType, false).List([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, item := range list.Items {
		got = append(got, string(item.(*Decoded).Raw()))
	}
	want := []string{`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"long-name","namespace":"n"},"spec":{"nodeName":"node-1"}}`,
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"mid","namespace":"n"},"spec":{}}`,
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n"}}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	// Objects with their kind and apiVersion, as a watch's are, are
	// stored from the decoder's other buffer.
	d := NewDecoder("c1", podType, false)
	var objs []*object.Object
	for _, w := range want {
		o, err := d.Object([]byte(w))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o.Object)
	}
	got = nil
	for _, o := range objs {
		got = append(got, string(o.Raw()))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// stream is a watch response body.
type stream struct{ io.Reader }

func (stream) Close() error { return nil }

func TestWatchDecoder(t *testing.T) {
	big := strings.Repeat("x", 200<<10) // larger than the reader's buffer
	body := `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"1","managedFields":[]}}}` + "\n" +
		"\n" +
		`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"2"},"spec":{"big":"` + big + `"}}}` + "\n" +
		"{\n  \"object\": {\"kind\":\"Pod\",\"apiVersion\":\"v1\",\n   \"metadata\": {\"name\": \"a\", \"resourceVersion\": \"3\"}},\n  \"type\": \"DELETED\"\n}\n" +
		`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"4","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n" +
		`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"5"}}}` + "\n" +
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (3)","reason":"Expired","code":410}}`
	type event struct {
		Type watch.EventType
		RV   string
		Raw  string
		End  bool
	}
	want := []event{
		{watch.Added, "1", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"1"}}`, false},
		{watch.Modified, "2", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"2"},"spec":{"big":"` + big + `"}}`, false},
		{watch.Deleted, "3", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"3"}}`, false},
		{watch.Bookmark, "4", "", true},
		{watch.Bookmark, "5", "", false},
		{Type: watch.Error},
	}
	// However the body's reads split it.
	for name, r := range map[string]func() io.Reader{
		"whole":                   func() io.Reader { return strings.NewReader(body) },
		"byte a read":             func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) },
		"half a read":             func() io.Reader { return iotest.HalfReader(strings.NewReader(body)) },
		"EOF with the last bytes": func() io.Reader { return iotest.DataErrReader(strings.NewReader(body)) },
	} {
		t.Run(name, func(t *testing.T) {
			w := NewWatchDecoder(stream{r()}, NewDecoder("c1", podType, false))
			var got []event
			for {
				typ, obj, err := w.Decode()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if d, ok := obj.(*Decoded); ok {
					obj = d.Object // a bookmark is an *object.Object of its own
				}
				switch o := obj.(type) {
				case *object.Object:
					a := o.GetObjectMeta()
					got = append(got, event{typ, a.GetResourceVersion(), string(o.Raw()), a.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"})
				case *metav1.Status:
					err := apierrors.FromObject(o)
					if !apierrors.IsResourceExpired(err) {
						t.Errorf("ERROR event: %v, want 410 Expired", err)
					}
					got = append(got, event{Type: typ})
				default:
					t.Fatalf("%s event with %T", typ, obj)
				}
				// Between events a watch that has read no further than
				// its small buffer holds keeps that buffer alone,
				// whatever the size of the last event.
				if len(w.data) <= smallRead && (w.pooled != nil || cap(w.data) > smallRead) {
					t.Errorf("after the %s event the watch keeps %d bytes of buffer", typ, cap(w.data))
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatchDecoderEnds(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       error
	}{
		{"inside an event", `{"type":"ADDED","object":{"kind":"Pod"`, io.ErrUnexpectedEOF},
		{"after whitespace", "\n  \n", io.EOF},
		{"empty", "", io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := NewWatchDecoder(stream{strings.NewReader(tc.body)}, NewDecoder("c1", podType, false)).Decode()
			if !errors.Is(err, tc.want) {
				t.Errorf("Decode: %v, want %v", err, tc.want)
			}
		})
	}
	if _, _, err := NewWatchDecoder(stream{strings.NewReader(`{"type":"ADDED"}` + "\n")}, NewDecoder("c1", podType, false)).Decode(); err == nil {
		t.Error("an event without an object decoded")
	}
	// A string where none may be is a syntax error at once, even where it
	// runs to the end of what has come: not a line to be continued.
	for _, body := range []string{`{"type":"ADDED","object":{"spec":{"a" "b`, `{"type":"ADDED","object":{"spec":["a" "b`} {
		_, _, err := NewWatchDecoder(stream{strings.NewReader(body)}, NewDecoder("c1", podType, false)).Decode()
		if err == nil || errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "unexpected string") {
			t.Errorf("%s: %v, want a syntax error", body, err)
		}
	}
	if _, _, err := NewWatchDecoder(stream{emptyReader{}}, NewDecoder("c1", podType, false)).Decode(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("a body that returns nothing: %v, want %v", err, io.ErrNoProgress)
	}
	// A body cut with an error after a whole event: the event, then the error.
	cut := iotest.TimeoutReader(strings.NewReader(`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"5"}}}` + "\n"))
	w := NewWatchDecoder(stream{cut}, NewDecoder("c1", podType, false))
	if typ, _, err := w.Decode(); typ != watch.Bookmark || err != nil {
		t.Errorf("first event: %s, %v; want BOOKMARK", typ, err)
	}
	if _, _, err := w.Decode(); !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("after the event: %v, want %v", err, iotest.ErrTimeout)
	}
}

// emptyReader returns nothing, and no error, forever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// FuzzObject checks, for any input, that decoding does not panic and
// that what it stores is valid JSON, equal to the input as encoding/json
// reads it less the members the decoder leaves out.
func FuzzObject(f *testing.F) {
	for _, s := range []string{
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","managedFields":[{}],"annotations":{"` + LastApplied + `":"x"}},"spec":{"a":[1,2.5e3,-0,true,null,"s"]}}`,
		`{"metadata":{"labels":{"a":"b"},"ownerReferences":[{"uid":"u","controller":true}]}}`,
		"{ \"a\" : [ { } , [ ] ] }",
		`{"data":{"k":"v"},"stringData":1}`,
		`{"a":"\u00e9\ud83d\ude00\\"}`,
		`{"status":{"phase":"x"},"metadata":{"name":"a"},"spec":{"b":1}}`,
		"{ \"spec\" : [ 1 ] , \"sp\\u0065c\" : 2 , \"status\":\"s\",\"status\":{}}",
		`{"spec":{"containers":[{"image":"a","image":"b"},{"im\u0061ge":"c"},null,{"image":null},{"image":{"x":1}}],"containers":[{"image":"d"}]}}`,
		"{\"spec\":{\"containers\":[ {\"image\":\"a b\"} ]},\"status\":{\"conditions\":[[{\"type\":\"Ready\"}],{\"type\":2}]}}",
		`{"kind":"Pod","kind":"Node","spec":{"nodeName":"n","template":{"spec":{"containers":[{"image":"e"}]}}}}`,
	} {
		f.Add([]byte(s))
	}
	// The projected paths overlap the searched ones: one walk reads both.
	projecting := *secretType
	// Paths end at values other paths go on into (spec, status), and at
	// the kind a list's items are given.
	projecting.Projected = fieldpath.NewSet([]fieldpath.Path{fieldpath.MustParse("metadata.name"),
		fieldpath.MustParse("spec.containers[].image"), fieldpath.MustParse("metadata.annotations"), fieldpath.MustParse("status"),
		fieldpath.MustParse("kind"), fieldpath.MustParse("spec"), fieldpath.MustParse("status.conditions[].type"),
		fieldpath.MustParse("spec.nodeName"), fieldpath.MustParse("cluster")})
	f.Fuzz(func(t *testing.T, in []byte) {
		o, err := NewDecoder("c1", &projecting, true).Object(in)
		if err != nil {
			return
		}
		if !json.Valid(o.Raw()) {
			t.Fatalf("stored invalid JSON %q from %q", o.Raw(), in)
		}
		// The offsets of spec and status the decoder gave, as reading the
		// stored bytes finds them.
		given, read := (&object.BodyReader{}).Doc(o.Object), fieldpath.Members("c1", o.Raw())
		if given.Spec != read.Spec || given.Status != read.Status {
			t.Fatalf("%q stored as %q: spec and status at %d and %d, read at %d and %d", in, o.Raw(), given.Spec, given.Status, read.Spec, read.Status)
		}
		// The search text and the projected values read before the body
		// was stored are the stored body's.
		if want := search.AppendBodyTokens(nil, o.Object, read); !slices.Equal(o.Text, want) {
			t.Fatalf("%q: Text %q, the stored body's %q", in, o.Text, want)
		}
		for _, p := range projecting.Projected.Paths() {
			if got, want := projected(o.Object, p), p.AppendJSONIn(nil, read); !bytes.Equal(got, want) {
				t.Fatalf("%q: %s projected as %s, the stored body's %s", in, p, got, want)
			}
		}
		var want map[string]any
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("decoded %q, which encoding/json refuses: %v", in, err)
		}
		delete(want, "data")
		delete(want, "stringData")
		want["kind"], want["apiVersion"] = memberOr(in, "kind", "Secret"), memberOr(in, "apiVersion", "v1")
		if m, ok := want["metadata"].(map[string]any); ok {
			for key, got := range map[string]string{"name": o.Name, "namespace": o.Namespace, "uid": string(o.UID), "resourceVersion": o.ResourceVersion} {
				if v, ok := m[key].(string); ok && v != got {
					t.Fatalf("%q: %s %q, want %q", in, key, got, v)
				}
			}
			delete(m, "managedFields")
			if a, ok := m["annotations"].(map[string]any); ok {
				delete(a, LastApplied)
				if len(a) == 0 {
					delete(m, "annotations")
				}
			}
		}
		var got map[string]any
		if err := json.Unmarshal(o.Raw(), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q stored as %q (-want +got):\n%s", in, o.Raw(), diff)
		}
	})
}

// memberOr returns the value of the top-level member key of in as
// encoding/json reads it (the last, if repeated: the decoder keeps every
// one, and encoding/json reads the stored bytes the same way), or def if
// in has none.
func memberOr(in []byte, key, def string) any {
	var m map[string]json.RawMessage
	if json.Unmarshal(in, &m) != nil {
		return def
	}
	raw, ok := m[key]
	if !ok {
		return def
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

// BenchmarkDecodePodList decodes a list of 500 realistic Pods (with
// managedFields, 2.2 KB each) into object.Objects: with package wire,
// and as the informers did before it, into unstructured maps by
// apimachinery's JSON decoder, then managedFields dropped and the maps
// encoded again by object.NewObject.
func BenchmarkDecodePodList(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[`)
	for i := range 500 {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(strings.Replace(benchPod, `"name":"web-0"`, `"name":"web-`+strings.Repeat("1", i%7+1)+`"`, 1))
	}
	buf.WriteString(`]}`)
	in := buf.Bytes()
	b.Run("wire", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewDecoder("c1", podType, false).List(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unstructured", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			var list unstructured.UnstructuredList
			if err := list.UnmarshalJSON(in); err != nil {
				b.Fatal(err)
			}
			for i := range list.Items {
				u := &list.Items[i]
				u.SetManagedFields(nil)
				if _, err := object.NewObject("c1", podType, u); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

const benchPod = `{"metadata":{"name":"web-0","generateName":"web-7d9f8b6c5d-","namespace":"bench","uid":"0b2a2b5e-5d1c-4a52-9d7b-2f8c3c1d9e10","resourceVersion":"123456","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"web","pod-template-hash":"7d9f8b6c5d","tier":"frontend"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9f8b6c5d","uid":"6f1b2d3c-0000-4000-8000-000000000001","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"6f1b2d3c-0000-4000-8000-000000000001\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}}]},"spec":{"volumes":[{"name":"config","configMap":{"name":"web-config","defaultMode":420}}],"containers":[{"name":"web","image":"registry.example.com/team/web:1.24.3","args":["--port","8080"],"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"env":[{"name":"WEB_SETTING_0","value":"value-0-for-web"}],"resources":{"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"config","mountPath":"/etc/web"}],"readinessProbe":{"httpGet":{"path":"/readyz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","securityContext":{},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Pending","qosClass":"Burstable"}}`

// BenchmarkWatchDecode decodes a watch stream of 500 realistic Pod events
// (2.2 KB each, longer than a watch's own buffer), read 32 KiB at a time as
// an HTTP/2 body hands them over.
func BenchmarkWatchDecode(b *testing.B) {
	var buf bytes.Buffer
	for i := range 500 {
		buf.WriteString(`{"type":"MODIFIED","object":`)
		buf.WriteString(strings.Replace(benchPod, `"name":"web-0"`, `"name":"web-`+strings.Repeat("1", i%7+1)+`"`, 1))
		buf.WriteString("}\n")
	}
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		w := NewWatchDecoder(stream{&chunked{in: in, n: 32 << 10}}, NewDecoder("c1", podType, false))
		for {
			_, _, err := w.Decode()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// chunked reads in, at most n bytes a read.
type chunked struct {
	in []byte
	n  int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.in)
	c.in = c.in[n:]
	return n, nil
}

// TestWatchDecodersShareBuffers runs watches side by side whose events
// are longer than a watch's own buffer, so that they pass the pooled
// buffers between them: each must decode exactly its own stream.
func TestWatchDecodersShareBuffers(t *testing.T) {
	const watches, events = 4, 200
	var wg sync.WaitGroup
	for g := range watches {
		wg.Go(func() {
			var body bytes.Buffer
			for i := range events {
				pad := strings.Repeat("x", (i*37+g*101)%2048)
				fmt.Fprintf(&body, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"w%d-%d","resourceVersion":"%d"},"spec":{"pad":%q}}}`+"\n", g, i, i+1, pad)
			}
			w := NewWatchDecoder(stream{&chunked{in: body.Bytes(), n: 700 + g*13}}, NewDecoder("c1", podType, false))
			for i := range events {
				_, obj, err := w.Decode()
				if err != nil {
					t.Errorf("watch %d, event %d: %v", g, i, err)
					return
				}
				o := obj.(*Decoded)
				if want := fmt.Sprintf("w%d-%d", g, i); o.Name != want || o.ResourceVersion != fmt.Sprint(i+1) {
					t.Errorf("watch %d, event %d: %s at %s, want %s at %d", g, i, o.Name, o.ResourceVersion, want, i+1)
					return
				}
				runtime.Gosched() // let the other watches take the buffer just given back

			}
			if _, _, err := w.Decode(); err != io.EOF {
				t.Errorf("watch %d after its events: %v, want EOF", g, err)
			}
		})
	}
	wg.Wait()
}

// TestWatchText checks the search text of a watch's objects and that the
// watch's decoder keeps no chunk of Text for later events: each event's
// Text is its own, and the decoder holds the last event's at most.
func TestWatchText(t *testing.T) {
	var body bytes.Buffer
	const events = 50
	for i := range events {
		fmt.Fprintf(&body, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p%d","annotations":{"note":"Word%d shared"}},"spec":{"containers":[{"image":"img%d:v1"}]}}}`+"\n", i, i, i)
	}
	d := NewDecoder("c1", podType, false)
	w := NewWatchDecoder(stream{&chunked{in: body.Bytes(), n: 100}}, d)
	var objs []*Decoded
	for range events {
		_, obj, err := w.Decode()
		if err != nil {
			t.Fatal(err)
		}
		o := obj.(*Decoded)
		objs = append(objs, o)
		if size := cap(d.textBytes); size > 64 {
			t.Fatalf("after %s the decoder keeps %d bytes of Text", o.Name, size)
		}
	}
	for i, o := range objs {
		want := []string{fmt.Sprintf("img%d", i), "shared", "v1", fmt.Sprintf("word%d", i)}
		if !slices.Equal(o.Text, want) {
			t.Errorf("%s: Text %q, want %q", o.Name, o.Text, want)
		}
	}
}

// projected returns the JSON o keeps for p, null when it keeps none.
func projected(o *object.Object, p fieldpath.Path) []byte {
	if v, ok := o.Projected(p); ok {
		return v
	}
	return []byte("null")
}

// TestInterned checks that the strings objects repeat (cluster,
// namespace, label keys and values, owners' API versions and kinds) are
// the interned ones: the Decoder interns them, and object.Build keeps
// them as they are (Meta.Interned).
func TestInterned(t *testing.T) {
	// unique keeps a canonical string only while something holds its
	// Handle: a collection between the decoder's Make and the test's may
	// drop it, and the next Make copies the string again. The collector
	// is off here, so that the test reads the decoder's interning, not
	// the collector's timing (it failed once in CI that way).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	in := func(name string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"name":%q,"namespace":"prod","labels":{"app":"web"},`+
			`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"u"}]}}`, name)
	}
	for i, name := range []string{"a", "b"} {
		o, err := NewDecoder(strings.Clone("c1"), podType, false).Object(in(name))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{o.Cluster, o.Namespace, o.Labels[0].Key, o.Labels[0].Value, o.Owners[0].APIVersion, o.Owners[0].Kind} {
			if unsafe.StringData(s) != unsafe.StringData(unique.Make(s).Value()) {
				t.Errorf("object %d: %q is not interned", i, s)
			}
		}
	}
}

// FuzzContainsSpace checks containsSpace, which reads eight bytes at a
// time, against a byte at a time.
func FuzzContainsSpace(f *testing.F) {
	for _, s := range []string{"", " ", `{"a":"b"}`, `[{"uid":"x", "name":"y"}]`, "\x01\x02\x1f abcdefgh", "abcdefgh\tijk", "\xff\xfe\x80 \x7f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := slices.ContainsFunc(b, isSpace)
		if got := containsSpace(b); got != want {
			t.Errorf("containsSpace(%q) = %v, want %v", b, got, want)
		}
	})
}
