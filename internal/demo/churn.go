package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// maxChurnWidgets bounds the Widgets the churn keeps alive per cluster
// before it deletes the oldest.
const maxChurnWidgets = 3

// churn changes the fleet a little every interval until ctx ends: it takes
// turns among the clusters and among three changes (scale a Deployment by
// one Pod, relabel a ConfigMap, create or delete a Widget), so that live
// views and subscriptions always have something to show. A failed change is
// logged and the churn goes on; it runs in the caller's goroutine.
func churn(ctx context.Context, members []*member, interval time.Duration) {
	logger := klog.FromContext(ctx)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for turn := 0; ; turn++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m := members[turn%len(members)]
		var what string
		var err error
		switch (turn / len(members)) % 3 {
		case 0:
			what, err = m.scaleSomeApp(ctx)
		case 1:
			what, err = m.relabelSomeConfigMap(ctx)
		default:
			what, err = m.toggleWidget(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			logger.Error(err, "Churn failed", "cluster", m.plan.name)
			continue
		}
		logger.V(2).Info("Churn", "cluster", m.plan.name, "change", what)
	}
}

// scaleSomeApp adds a Pod to a random app, or removes one: an app at its
// maximum shrinks, one at a single Pod grows, others go either way.
func (m *member) scaleSomeApp(ctx context.Context) (string, error) {
	a := m.apps[rand.N(len(m.apps))]
	grow := len(a.pods) <= 1 || (len(a.pods) < a.maxPods && rand.N(2) == 0)
	if grow {
		if err := m.createPod(ctx, a); err != nil {
			return "", err
		}
	} else {
		i := rand.N(len(a.pods))
		// A Pod bound to a node is only marked for deletion until its kubelet
		// confirms; with no kubelet, delete it at once, as a force delete does.
		opts := metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}
		if err := m.client.CoreV1().Pods(a.namespace).Delete(ctx, a.pods[i], opts); err != nil {
			return "", fmt.Errorf("delete pod %s/%s: %w", a.namespace, a.pods[i], err)
		}
		a.pods = slices.Delete(a.pods, i, i+1)
	}
	if err := m.setReplicas(ctx, a, len(a.pods), true); err != nil {
		return "", err
	}
	return fmt.Sprintf("scaled deployment %s/%s to %d", a.namespace, a.name, len(a.pods)), nil
}

// relabelSomeConfigMap moves a random app's ConfigMap to a new
// config-version label.
func (m *member) relabelSomeConfigMap(ctx context.Context) (string, error) {
	cm := m.configs[rand.N(len(m.configs))]
	m.revision++
	version := fmt.Sprintf("v%d", m.revision+1)
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"config-version":%q}}}`, version)
	if _, err := m.client.CoreV1().ConfigMaps(cm.namespace).Patch(ctx, cm.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("relabel config map %s/%s: %w", cm.namespace, cm.name, err)
	}
	return fmt.Sprintf("relabelled config map %s/%s config-version=%s", cm.namespace, cm.name, version), nil
}

// toggleWidget creates a Widget in a random namespace, or, once
// maxChurnWidgets exist, deletes the oldest one it created.
func (m *member) toggleWidget(ctx context.Context) (string, error) {
	if len(m.widgets) >= maxChurnWidgets {
		w := m.widgets[0]
		if err := m.dynamic.Resource(widgetGVR).Namespace(w.namespace).Delete(ctx, w.name, metav1.DeleteOptions{}); err != nil {
			return "", fmt.Errorf("delete widget %s/%s: %w", w.namespace, w.name, err)
		}
		m.widgets = m.widgets[1:]
		return fmt.Sprintf("deleted widget %s/%s", w.namespace, w.name), nil
	}
	m.revision++
	ns := m.plan.namespaces[rand.N(len(m.plan.namespaces))].name
	name := fmt.Sprintf("churn-%d", m.revision)
	if err := m.createWidget(ctx, ns, name, m.revision); err != nil {
		return "", err
	}
	m.widgets = append(m.widgets, objectRef{ns, name})
	return fmt.Sprintf("created widget %s/%s", ns, name), nil
}
