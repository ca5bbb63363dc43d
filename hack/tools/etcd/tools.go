//go:build tools

// Package tools pins the etcd that the test control plane runs. The root
// package of go.etcd.io/etcd/server/v3 is the etcd server's main.
package tools

import _ "go.etcd.io/etcd/server/v3"
