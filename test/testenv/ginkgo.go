package testenv

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/manager"
	"github.com/mcp-catalog/operator/test/capture"
	"github.com/mcp-catalog/operator/test/controlplane"
)

// The calls Ginkgo suites use: the core above, reporting through GinkgoTB().

// CaptureLogs is StartLogs for a suite: the log goes to the spec's output
// too.
func CaptureLogs() *capture.Buffer {
	return StartLogs(GinkgoTB(), GinkgoWriter)
}

// ControlPlane is a running control plane, stopped by Stop or when the
// suite ends.
type ControlPlane struct {
	*controlplane.ControlPlane
}

// StartControlPlane starts a control plane with the operator's CRDs. Call
// it from BeforeSuite.
func StartControlPlane(opts ...controlplane.Option) *ControlPlane {
	GinkgoHelper()
	return &ControlPlane{controlplane.Start(GinkgoTB(), opts...)}
}

// Stop stops the control plane; nil is allowed, for an AfterSuite after a
// failed BeforeSuite.
func (cp *ControlPlane) Stop() {
	GinkgoHelper()
	if cp != nil && cp.ControlPlane != nil {
		Expect(cp.ControlPlane.Stop()).To(Succeed())
	}
}

// StartManager builds the manager with opts and starts it; the suite stops
// it (a spec may stop it and start another that outlives the spec).
func StartManager(cfg *rest.Config, opts manager.Options) *Manager {
	GinkgoHelper()
	return StartManagerFor(GinkgoTB(), cfg, opts)
}

// Namespace creates a namespace with a random name starting with prefix for
// the current spec; cleanup, when not nil, runs on it when the spec ends.
func Namespace(c client.Client, prefix string, cleanup func(ctx context.Context, ns string)) string {
	GinkgoHelper()
	ns := createNamespace(GinkgoTB(), c, prefix)
	if cleanup != nil {
		DeferCleanup(func(ctx SpecContext) { cleanup(ctx, ns) })
	}
	return ns
}
