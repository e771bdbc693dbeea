package informers

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/fleetcache/fleetcache/pkg/columns"
	"github.com/fleetcache/fleetcache/pkg/index/object"
)

// How the columns of a type's objects (pkg/columns) learn what they need
// beyond the kind: the Ingester records the type's printer in the
// columns.Types table of its Options (Options.Columns) once, before any
// object points at the type, and the GraphQL resolvers read it there
// through the objects' types.
//
//   - A type whose group is not built in is a custom resource: its printer
//     is a *columns.Custom, whose printer columns are read from the
//     cluster's CustomResourceDefinition <plural>.<group> each time the
//     type's run starts (at first, and whenever it is replaced after
//     an interruption). A change of the CRD is therefore picked up at the
//     type's next restart, not as it happens. A CRD that is missing
//     (an aggregated API) or that fleetcache may not read means no printer
//     columns: the objects print as their name alone.
//   - Core Secrets whose data is not cached get columns.DataNotCached.

// crds is the resource of CustomResourceDefinitions.
var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// builtIn reports whether group is one of Kubernetes' own API groups:
// those client-go's scheme knows, and the two it does not.
func builtIn(group string) bool {
	return scheme.Scheme.IsGroupRegistered(group) || group == "apiextensions.k8s.io" || group == "apiregistration.k8s.io"
}

// setPrinter records t's printer, before t is shared.
func (c *Ingester) setPrinter(t *object.Type) {
	switch {
	case !builtIn(t.GVR.Group):
		c.opts.Columns.Set(t, &columns.Custom{})
	case t.GVR.GroupResource() == secrets && !c.opts.CacheSecretData:
		c.opts.Columns.Set(t, columns.DataNotCached)
	}
}

// loadPrinterColumns sets the printer columns of a custom resource type
// from its CustomResourceDefinition. A missing or forbidden CRD means none
// (logged once per type); any other failure leaves the columns as they
// were, until the type's next start.
func (c *Ingester) loadPrinterColumns(ctx context.Context, t *object.Type) {
	custom, ok := c.opts.Columns.Printer(t).(*columns.Custom)
	if !ok {
		return
	}
	logger := klog.FromContext(ctx).WithValues("resource", t.Resource)
	cols, err := c.printerColumns(ctx, t)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		if err := custom.Set(nil); err != nil {
			logger.Error(err, "Clearing printer columns failed")
		}
		c.mu.Lock()
		first := !c.noCRD[t.Resource]
		c.noCRD[t.Resource] = true
		c.mu.Unlock()
		if first {
			logger.Info("No printer columns: the type's CustomResourceDefinition cannot be read; its objects' columns are their names", "err", err)
		}
	case err != nil:
		logger.Info("Reading the type's CustomResourceDefinition failed; its printer columns stay as they were until the type restarts", "err", err)
	default:
		if err := custom.Set(cols); err != nil {
			logger.Error(err, "Invalid printer columns in the CustomResourceDefinition")
		}
	}
}

// printerColumns reads the additionalPrinterColumns of the version of t
// the cluster serves from its CustomResourceDefinition.
func (c *Ingester) printerColumns(ctx context.Context, t *object.Type) ([]columns.PrinterColumn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	defer cancel()
	u, err := c.dynamic.Resource(crds).Get(ctx, t.GVR.Resource+"."+t.GVR.Group, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get customresourcedefinition %s.%s: %w", t.GVR.Resource, t.GVR.Group, err)
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode customresourcedefinition %s: %w", u.GetName(), err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name                     string                  `json:"name"`
				AdditionalPrinterColumns []columns.PrinterColumn `json:"additionalPrinterColumns"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &crd); err != nil {
		return nil, fmt.Errorf("decode customresourcedefinition %s: %w", u.GetName(), err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == t.GVR.Version {
			return v.AdditionalPrinterColumns, nil
		}
	}
	return nil, nil
}
