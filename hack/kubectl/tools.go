//go:build tools

// Package tools pins the kubectl that the Kubernetes API tests run against
// fleetcache and against the members (pkg/kubeapi). It is a module of its own,
// apart from hack/tools, so that a change here never rebuilds kube-apiserver,
// but it requires the same Kubernetes release with the same replace block.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
)
