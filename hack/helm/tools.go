//go:build tools

// Package tools pins the helm CLI that the deploy tests use to lint and render
// the chart in deploy/helm. It is a module of its own, apart from hack/tools,
// so that helm's dependencies never move the versions that kube-apiserver and
// etcd are built with.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
