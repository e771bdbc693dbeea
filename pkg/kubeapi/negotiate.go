package kubeapi

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// form is what a client asked the answer to be, by its Accept header: the
// objects themselves, a Table, their metadata, or (for discovery) the
// aggregated documents. Everything is JSON: protobuf and YAML are not
// offered, so a client that accepts nothing else gets 406.
type form struct {
	kind formKind
	// version is the meta.k8s.io (or apidiscovery.k8s.io) version asked
	// for a Table, metadata or aggregated discovery.
	version string
}

type formKind int

const (
	formObject formKind = iota
	formTable
	formMetadata
	formDiscovery
)

// negotiate picks the first form of accept, by quality, that the server
// offers among allowed (formObject is always offered).
func negotiate(accept string, allowed ...formKind) (form, bool) {
	if accept == "" {
		return form{kind: formObject}, true
	}
	clauses := goautoneg.ParseAccept(accept)
	slices.SortStableFunc(clauses, func(a, b goautoneg.Accept) int { return cmp.Compare(b.Q, a.Q) })
	for _, c := range clauses {
		if c.Q <= 0 {
			continue
		}
		switch {
		case c.Type == "*" || c.Type == "application" && (c.SubType == "*" || c.SubType == "json"):
		default:
			continue
		}
		f, ok := formOf(c.Params)
		if ok && (f.kind == formObject || slices.Contains(allowed, f.kind)) {
			return f, true
		}
	}
	return form{}, false
}

// formOf reads the as, g and v parameters of a JSON media type.
func formOf(p map[string]string) (form, bool) {
	switch as, g, v := p["as"], p["g"], p["v"]; {
	case as == "":
		return form{kind: formObject}, true
	case as == "Table" && g == "meta.k8s.io" && (v == "v1" || v == "v1beta1"):
		return form{kind: formTable, version: v}, true
	case (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") && g == "meta.k8s.io" && (v == "v1" || v == "v1beta1"):
		return form{kind: formMetadata, version: v}, true
	case as == "APIGroupDiscoveryList" && g == "apidiscovery.k8s.io" && v == "v2":
		return form{kind: formDiscovery, version: v}, true
	}
	return form{}, false
}

// notAcceptable is the API server's 406.
func notAcceptable(accept string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: application/json (with as=Table, as=PartialObjectMetadata or, for discovery, as=APIGroupDiscoveryList); asked: " + accept,
	}}
}

// negotiateObjects returns the form of an answer of objects the request
// asks for, or answers 406.
func negotiateObjects(w http.ResponseWriter, r *http.Request) (form, bool) {
	accept := r.Header.Get("Accept")
	f, ok := negotiate(accept, formTable, formMetadata)
	if !ok {
		writeStatus(w, notAcceptable(accept))
	}
	return f, ok
}
