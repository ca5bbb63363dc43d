//go:build tools

// Package tools pins the control-plane binaries the tests run: the
// kube-apiserver of every envtest suite, and the kube-controller-manager
// whose garbage collector the tool-lifetime test needs. They are built from
// the Go module proxy because no binary download is assumed.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
