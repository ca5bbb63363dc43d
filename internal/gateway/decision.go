package gateway

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// verdict is the gate's answer for one caller and one tool, approval aside:
// allowed, or refused with a reason.
type verdict struct {
	// reason is empty when the tool may be listed and called, and otherwise
	// one of the Deny reasons.
	reason string
	// detail refines reason: for NotServable, why the tool is not servable.
	detail string
}

func (v verdict) allowed() bool { return v.reason == "" }

// refused is a refusal for reason, refined by what the tool's state says.
func refused(reason string, t *mcpv1alpha1.McpTool) verdict {
	return verdict{reason: reason, detail: detailOf(reason, t)}
}

// decide is the one decision on whether a caller may see and call a tool:
// the list offers exactly the tools it allows, and every call is decided by
// it again (approval, a call-time step, aside). Its steps run in order and
// the first refusal wins; a rule on who may use which tool belongs here, so
// that the list and the call cannot disagree.
func (g *Gateway) decide(ctx context.Context, id *Identity, t *mcpv1alpha1.McpTool, ceiling mcpv1alpha1.DataClass) (verdict, error) {
	// Step 1: of the caller's namespace, and Kubernetes RBAC. They come
	// first so that a caller the tool is not for learns nothing about it:
	// not whether it is disabled, changed or waiting for its server.
	if t.Namespace != id.Namespace {
		return verdict{reason: DenyForbidden}, nil
	}
	ok, err := g.Authz.CanCall(ctx, id, t.Namespace, t.Name)
	if err != nil {
		return verdict{}, fmt.Errorf("authorising the call: %w", err)
	}
	if !ok {
		return verdict{reason: DenyForbidden}, nil
	}
	// Step 2: enabled, its current definition the approved one (whatever
	// Ready says: an import writes a new definition before the tool
	// controller turns Ready False, and in between the gateway would serve
	// what nobody approved), Ready for the current generation, and named.
	if !servable(t) || governance.Unapproved(t) != "" || t.Status.LocalName == "" {
		return refused(DenyNotServable, t), nil
	}
	// Step 3: the data-class ceiling, against the class the tool controller
	// recorded.
	if !governance.WithinCeiling(t.Status.EffectiveDataClass, ceiling) {
		return refused(DenyAboveCeiling, t), nil
	}
	return verdict{}, nil
}

// ceiling is the caller's data-class ceiling, from the access policies of
// its namespace.
func (g *Gateway) ceiling(ctx context.Context, id *Identity) (mcpv1alpha1.DataClass, error) {
	var policies mcpv1alpha1.McpAccessPolicyList
	if err := g.Reader.List(ctx, &policies, client.InNamespace(id.Namespace)); err != nil {
		return "", fmt.Errorf("reading access policies: %w", err)
	}
	return ceilingFor(id, policies.Items), nil
}

// approvalMode is how the caller's calls of tools that require approval are
// approved, from the access policies of its namespace.
func (g *Gateway) approvalMode(ctx context.Context, id *Identity) (mcpv1alpha1.ApprovalMode, error) {
	var policies mcpv1alpha1.McpAccessPolicyList
	if err := g.Reader.List(ctx, &policies, client.InNamespace(id.Namespace)); err != nil {
		return "", fmt.Errorf("reading access policies: %w", err)
	}
	return approvalModeFor(id, policies.Items), nil
}
