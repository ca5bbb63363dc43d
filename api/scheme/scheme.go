// Package scheme builds the runtime scheme that clients of this operator's
// API need: the built-in Kubernetes kinds plus the mcp.catalog.dev kinds. It
// sits next to the API so that a client such as kubectl-mcp gets a scheme
// without linking the controllers.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// New returns a scheme with the built-in kinds and this operator's kinds
// registered.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(mcpv1alpha1.AddToScheme(s))
	return s
}
