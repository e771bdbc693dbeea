package testcluster

import (
	"context"
	"errors"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Dynamic returns a dynamic client for cfg (an AdminConfig, a UserConfig or
// a Secondary's), failing the test if it cannot be built.
func Dynamic(tb testing.TB, cfg *rest.Config) dynamic.Interface {
	tb.Helper()
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// CreateNamespace creates namespace name unless it exists.
func CreateNamespace(tb testing.TB, c dynamic.Interface, name string) {
	tb.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := c.Resource(namespaces).Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatal(err)
	}
}

// Seed creates the objects mk(0) … mk(count-1) of type gvr, 16 at a time,
// leaving those that already exist: benchmarks seed large fleets with it.
func Seed(tb testing.TB, c dynamic.Interface, gvr schema.GroupVersionResource, count int, mk func(i int) *unstructured.Unstructured) {
	tb.Helper()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range 16 {
		wg.Go(func() {
			for i := range work {
				u := mk(i)
				_, err := c.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range count {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
}
