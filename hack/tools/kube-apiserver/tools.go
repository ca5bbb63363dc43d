//go:build tools

// Package tools pins the kube-apiserver that the test control plane runs.
// It is built from the Go module proxy because no binary download is assumed.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
