package governance

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// The rules of a shared catalog (docs/adr/032-shared-catalog.md), each
// once: the McpSharedServer controller reports them and the gateway
// decides by them, on every list and call.

// SharedWith reports whether the owner of srv shares it with the namespace
// named namespace, whose labels are nsLabels, trusting a selector's every
// key: SelectorTrust{}.SharedWith.
func SharedWith(srv *mcpv1alpha1.McpServer, namespace string, nsLabels map[string]string) bool {
	return SelectorTrust{}.SharedWith(srv, namespace, nsLabels)
}

// SelectorTrust is whose word a namespace selector takes
// (docs/adr/046-selector-trust.md). A selector matches namespaces by
// labels, and labels are set by whoever may create or update a namespace,
// which on a self-service platform is the tenant itself: a tenant labels
// its own namespace to match. With KeyPrefix set, a selector may only use
// keys under it, which an admission policy on namespaces reserves to the
// cluster's administrators; a selector with another key grants no
// namespace. The zero value trusts every key, and so every namespace
// labeller.
type SelectorTrust struct {
	// KeyPrefix, when set, is the prefix every key of a sharing selector
	// must start with (e.g. "sharing.mcp.catalog.dev/").
	KeyPrefix string
}

// SharedWith reports whether the owner of srv shares it with the namespace
// named namespace, whose labels are nsLabels: the namespace is listed in
// spec.sharing.namespaces, or the selector matches its labels. nsLabels
// nil means the namespace is not known (the API server labels every
// namespace with kubernetes.io/metadata.name, so a namespace read has
// labels): no selector matches it, not even through NotIn or
// DoesNotExist, nor {}. A selector this trust refuses (SelectorProblem)
// grants nothing.
func (t SelectorTrust) SharedWith(srv *mcpv1alpha1.McpServer, namespace string, nsLabels map[string]string) bool {
	if srv == nil || srv.Spec.Sharing == nil || namespace == srv.Namespace {
		return false
	}
	s := srv.Spec.Sharing
	if slices.Contains(s.Namespaces, namespace) {
		return true
	}
	if s.NamespaceSelector == nil || nsLabels == nil {
		return false
	}
	if t.SelectorProblem(s.NamespaceSelector) != "" {
		return false
	}
	sel, err := SharingSelector(s.NamespaceSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(nsLabels))
}

// SelectorProblem says why the selector grants no namespace under this
// trust (a key outside KeyPrefix, or one it cannot evaluate), or "" when
// it can grant.
func (t SelectorTrust) SelectorProblem(s *mcpv1alpha1.NamespaceSelector) string {
	for _, e := range s.MatchExpressions {
		if t.KeyPrefix != "" && !strings.HasPrefix(e.Key, t.KeyPrefix) {
			return fmt.Sprintf("spec.sharing.namespaceSelector uses the label key %q, outside the prefix %q the administrator reserved for sharing; whoever may label a namespace could make it match, so the selector grants no namespace", e.Key, t.KeyPrefix)
		}
	}
	if _, err := SharingSelector(s); err != nil {
		return err.Error() + "; it grants no namespace"
	}
	return ""
}

// SelectsEveryNamespace reports whether the server's selector is {}: it
// shares the server with every namespace there is and every one created
// later, by anyone.
func SelectsEveryNamespace(srv *mcpv1alpha1.McpServer) bool {
	s := srv.Spec.Sharing
	return s != nil && s.NamespaceSelector != nil && len(s.NamespaceSelector.MatchExpressions) == 0
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
