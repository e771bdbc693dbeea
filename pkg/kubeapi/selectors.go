package kubeapi

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/fleetcache/fleetcache/pkg/index/fieldselector"
)

// memberFields are the field selectors a Kubernetes API server accepts for
// the built-in types beyond metadata.name and metadata.namespace (each
// type's GetAttrs and field label conversion in k8s.io/kubernetes), with the
// path each one reads in the object where it is not the label itself.
var memberFields = map[string]map[string]string{
	"pods": {
		"spec.nodeName": "", "spec.restartPolicy": "", "spec.schedulerName": "", "spec.serviceAccountName": "",
		"spec.hostNetwork": "", "status.phase": "", "status.podIP": "", "status.podIPs": "status.podIPs[].ip",
		"status.nominatedNodeName": "",
	},
	"events": {
		"involvedObject.kind": "", "involvedObject.namespace": "", "involvedObject.name": "", "involvedObject.uid": "",
		"involvedObject.apiVersion": "", "involvedObject.resourceVersion": "", "involvedObject.fieldPath": "",
		"reason": "", "reportingComponent": "", "source": "source.component", "type": "",
	},
	"secrets":                {"type": ""},
	"namespaces":             {"status.phase": ""},
	"nodes":                  {"spec.unschedulable": ""},
	"services":               {"spec.clusterIP": "", "spec.type": ""},
	"replicationcontrollers": {"status.replicas": ""},
	"replicasets.apps":       {"status.replicas": ""},
	"jobs.batch":             {"status.successful": ""},
	"certificatesigningrequests.certificates.k8s.io": {"spec.signerName": ""},
}

// booleanFields are the member field selectors on booleans whose absence
// means false.
var booleanFields = []string{"spec.hostNetwork", "spec.unschedulable"}

// parseLabels parses a labelSelector parameter, as a 400 when it is not one.
func parseLabels(text string) (labels.Selector, error) {
	sel, err := labels.Parse(text)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	return sel, nil
}

// parseFields turns a fieldSelector parameter, in the API server's syntax,
// into fleetcache's field selector over the stored objects: the fields the
// member accepts for the type (memberFields), metadata.name and
// metadata.namespace for every type, and the paths fleetcache indexes for
// the type (indexed). Any other field is a 400, as the API server answers.
func parseFields(t apiType, text string, indexed []string) (fieldselector.Selector, error) {
	sel, err := fields.ParseSelector(text)
	if err != nil {
		return fieldselector.Selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector %q: %v", text, err))
	}
	var parts []string
	for _, req := range sel.Requirements() {
		path, ok := fieldPath(t, req.Field, indexed)
		if !ok {
			return fieldselector.Selector{}, apierrors.NewBadRequest(fmt.Sprintf(
				"Unable to find %q that match label selector \"\", field selector %q: field label not supported: %s",
				t.gv.WithResource(t.res.Name).String(), text, req.Field))
		}
		parts = append(parts, requirement(path, req.Operator, req.Value, slices.Contains(booleanFields, req.Field)))
	}
	fs, err := fieldselector.Parse(strings.Join(parts, ","))
	if err != nil {
		return fieldselector.Selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector %q: %v", text, err))
	}
	return fs, nil
}

// fieldPath returns the path in the object that the field label reads.
func fieldPath(t apiType, field string, indexed []string) (string, bool) {
	if field == "metadata.name" || field == "metadata.namespace" {
		return field, true
	}
	if path, ok := memberFields[t.name][field]; ok {
		if path == "" {
			path = field
		}
		return path, true
	}
	return field, slices.Contains(indexed, field)
}

// requirement writes one requirement in fleetcache's syntax with the API
// server's meaning: an empty value is an absent field, and a boolean's
// absence is false.
func requirement(path string, op selection.Operator, value string, boolean bool) string {
	equal := op != selection.NotEquals
	switch {
	case value == "" && equal:
		return "!" + path
	case value == "":
		return path
	case boolean && value == "false" && equal:
		return path + "!=true"
	case boolean && value == "false":
		return path + "=true"
	case equal:
		return path + "=" + escape(value)
	default:
		return path + "!=" + escape(value)
	}
}

// escape escapes what fleetcache's field selectors read as syntax in a value.
func escape(v string) string {
	var b strings.Builder
	for i, r := range v {
		if strings.ContainsRune(`,()\`, r) || r == ' ' && (i == 0 || i == len(v)-1) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
