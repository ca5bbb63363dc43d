// Package validation tests what the API server itself enforces on the
// mcp.catalog.dev kinds: the generated CRDs are installed into a real
// kube-apiserver (envtest) and manifests are applied to it.
package validation

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mcp-catalog/operator/test/testenv"
)

var (
	k8sClient client.Client
	plane     *testenv.ControlPlane
	ctx       context.Context
	cancel    context.CancelFunc
)

func TestValidation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API validation")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	plane = testenv.StartControlPlane()
	k8sClient = plane.Client
})

var _ = AfterSuite(func() {
	cancel()
	plane.Stop()
})
