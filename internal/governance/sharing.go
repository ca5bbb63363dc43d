package governance

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// The rules of a shared catalog (docs/adr/032-shared-catalog.md), each
// once: the McpSharedServer controller reports them and the gateway
// decides by them, on every list and call.

// SharedWith reports whether the owner of srv shares it with the namespace
// named namespace, whose labels are nsLabels (nil when the namespace is
// not known: then only spec.sharing.namespaces can grant it). A selector
// that cannot be evaluated grants nothing.
func SharedWith(srv *mcpv1alpha1.McpServer, namespace string, nsLabels map[string]string) bool {
	if srv == nil || srv.Spec.Sharing == nil || namespace == srv.Namespace {
		return false
	}
	s := srv.Spec.Sharing
	if slices.Contains(s.Namespaces, namespace) {
		return true
	}
	if s.NamespaceSelector == nil {
		return false
	}
	sel, err := SharingSelector(s.NamespaceSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(nsLabels))
}

// SharingSelector is a namespace selector as a label selector, or an error
// when it cannot be evaluated (the API server rejects most such selectors).
func SharingSelector(s *mcpv1alpha1.NamespaceSelector) (labels.Selector, error) {
	ls := &metav1.LabelSelector{}
	for _, e := range s.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values})
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("spec.sharing.namespaceSelector cannot be evaluated: %w", err)
	}
	return sel, nil
}

// InvalidSharedServer says why an McpSharedServer cannot be honoured, or
// "" when it can: what the API server cannot check.
func InvalidSharedServer(ss *mcpv1alpha1.McpSharedServer) string {
	if ss.Spec.Server.Namespace == ss.Namespace {
		return "spec.server names an McpServer of this namespace; its tools are offered here without an McpSharedServer"
	}
	if c := ss.Spec.MaxDataClass; c != "" && !c.Valid() {
		return "spec.maxDataClass is not a data class"
	}
	return ""
}

// SharedEffective is a shared tool's data class and approval as the
// consuming namespace receives it: the owner's (Effective), with approval
// required when the consumer asks for it. The consumer cannot lower
// either.
func SharedEffective(srv *mcpv1alpha1.McpServer, t *mcpv1alpha1.McpTool, ss *mcpv1alpha1.McpSharedServer) (mcpv1alpha1.DataClass, bool) {
	class, approval := Effective(srv, t)
	return class, approval || ss.Spec.ApprovalRequired
}

// SharedCeiling is the ceiling a caller of a shared tool is held to: its
// own (from its namespace's McpAccessPolicies), lowered to the
// McpSharedServer's maxDataClass when that is lower.
func SharedCeiling(ceiling mcpv1alpha1.DataClass, ss *mcpv1alpha1.McpSharedServer) mcpv1alpha1.DataClass {
	if c := ss.Spec.MaxDataClass; c.Valid() && c.Rank() < ceiling.Rank() {
		return c
	}
	return ceiling
}

// DisabledByConsumer reports whether the consuming namespace disabled the
// shared tool of remote name remote for itself.
func DisabledByConsumer(ss *mcpv1alpha1.McpSharedServer, remote string) bool {
	return slices.Contains(ss.Spec.DisabledTools, remote)
}

// ApprovalTerms are the terms, beyond the caller's namespace's, on which a
// call that needs approval is approved. A consumer's call of a shared tool
// whose owner requires approval is approved on the owner's terms
// (spec.sharing.approvalModes and approvers): the consumer narrows them
// and never widens them. The zero value adds nothing: a call of the
// namespace's own tool, or one only the consumer requires approval for.
type ApprovalTerms struct {
	// Owner is the namespace of the server whose terms these are; "" when
	// there are none.
	Owner string
	// ClientElicitation reports whether the owner accepts the consumer's
	// ClientElicitation; Person is always accepted.
	ClientElicitation bool
	// ConsumerApproves reports whether, in the Person mode, the consumer's
	// people decide rather than the owner's.
	ConsumerApproves bool
}

// SharedApprovalTerms are the owner's terms for a consumer's calls of a
// tool of srv, when the owner's specs require approval of them
// (ownerRequires, from Effective). Unset fields are the safe defaults the
// API server would have written: Person only, decided by the owner's
// people.
func SharedApprovalTerms(srv *mcpv1alpha1.McpServer, ownerRequires bool) ApprovalTerms {
	if !ownerRequires || srv == nil {
		return ApprovalTerms{}
	}
	t := ApprovalTerms{Owner: srv.Namespace}
	if s := srv.Spec.Sharing; s != nil {
		t.ClientElicitation = slices.Contains(s.ApprovalModes, mcpv1alpha1.ApprovalClientElicitation)
		t.ConsumerApproves = s.Approvers == mcpv1alpha1.SharedApproversConsumer
	}
	return t
}

// Mode is the approval mode of a call whose caller's namespace chose
// chosen: chosen when the terms accept it, else Person.
func (a ApprovalTerms) Mode(chosen mcpv1alpha1.ApprovalMode) mcpv1alpha1.ApprovalMode {
	if chosen == mcpv1alpha1.ApprovalClientElicitation && (a.Owner == "" || a.ClientElicitation) {
		return chosen
	}
	return mcpv1alpha1.ApprovalPerson
}

// OwnerApproves reports whether, in the Person mode, the owner's people
// decide the call: its McpCallApproval is in the owner's namespace, where
// the consumer's people have no right.
func (a ApprovalTerms) OwnerApproves() bool {
	return a.Owner != "" && !a.ConsumerApproves
}
