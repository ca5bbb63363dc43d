package manager

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// SharingTrustReader is r with the administrator's selector trust applied
// to the McpServers it reads (docs/adr/046-selector-trust.md): a server
// whose sharing selector trust refuses (governance.SelectorTrust.
// SelectorProblem) is read without the selector, so that a grant decided
// from it (governance.SharedWith) holds for the namespaces it names only.
// The gateway reads through it, and so decides as the controllers report,
// until it takes the trust as an option of its own. The zero trust
// returns r.
func SharingTrustReader(r client.Reader, trust governance.SelectorTrust) client.Reader {
	if trust == (governance.SelectorTrust{}) {
		return r
	}
	return trustedSharing{Reader: r, trust: trust}
}

type trustedSharing struct {
	client.Reader
	trust governance.SelectorTrust
}

func (r trustedSharing) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if srv, ok := obj.(*mcpv1alpha1.McpServer); ok {
		r.apply(srv)
	}
	return nil
}

func (r trustedSharing) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*mcpv1alpha1.McpServerList); ok {
		for i := range l.Items {
			r.apply(&l.Items[i])
		}
	}
	return nil
}

// apply drops a selector the trust refuses. The sharing is replaced, not
// changed: a read that disables deep copies shares it with the cache.
func (r trustedSharing) apply(srv *mcpv1alpha1.McpServer) {
	s := srv.Spec.Sharing
	if s == nil || s.NamespaceSelector == nil || r.trust.SelectorProblem(s.NamespaceSelector) == "" {
		return
	}
	trusted := *s
	trusted.NamespaceSelector = nil
	srv.Spec.Sharing = &trusted
}
