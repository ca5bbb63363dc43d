// Package testproc holds what the tests that run the operator's binaries as
// processes (test/e2e, and the gateway scenario of test/bench) need to
// start them: a free port, an environment without the caller's kubeconfig,
// and a kubeconfig of their own.
package testproc

import (
	"net"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FreeAddr returns a loopback address with a port nothing listens on now.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// WithoutEnv is env without the variable name.
func WithoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// WriteKubeconfig writes a kubeconfig for cfg's API server to path,
// authenticating with token, or with cfg's client certificate when token
// is empty.
func WriteKubeconfig(tb testing.TB, path string, cfg *rest.Config, token string) {
	tb.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	user := &clientcmdapi.AuthInfo{Token: token}
	if token == "" {
		user = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	}
	kc.AuthInfos["test"] = user
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		tb.Fatalf("writing %s: %v", path, err)
	}
}
