//go:build tools

// Package tools pins the real servers the test bed runs: kube-apiserver and etcd,
// built from the Go module proxy into bin/ by `make testbin`.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
