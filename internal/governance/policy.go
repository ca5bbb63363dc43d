package governance

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// wildcard in an McpAccessPolicy's serviceAccounts names every
// ServiceAccount of the policy's namespace.
const wildcard = "*"

// InvalidPolicy says what is wrong with an McpAccessPolicy's spec, one
// phrase per problem naming the field, or "" when the spec is valid. Besides
// the rules the CRD gives the API server (repeated here for objects stored
// before them), a wildcard ("*") beside other names is invalid: the names
// say the policy is meant to be narrow while the wildcard grants the whole
// namespace, and a reader of the policy cannot tell which was meant.
func InvalidPolicy(spec *mcpv1alpha1.McpAccessPolicySpec) string {
	var problems []string
	sas := spec.ServiceAccounts
	if len(sas) == 0 && len(spec.Users) == 0 && len(spec.Groups) == 0 {
		problems = append(problems, "the policy names no one: list serviceAccounts, users or groups")
	}
	for _, f := range []struct {
		field string
		names []string
	}{{"users", spec.Users}, {"groups", spec.Groups}} {
		for i, n := range f.names {
			if n == "" || strings.HasPrefix(n, "system:") {
				problems = append(problems, fmt.Sprintf("spec.%s[%d] is empty or in system:, which no OAuth identity is", f.field, i))
				break
			}
		}
	}
	first := make(map[string]int, len(sas))
	badName, repeated := -1, -1
	for i, sa := range sas {
		if badName < 0 && sa != wildcard && len(validation.IsDNS1123Subdomain(sa)) > 0 {
			badName = i
		}
		if _, seen := first[sa]; seen {
			if repeated < 0 {
				repeated = i
			}
			continue
		}
		first[sa] = i
	}
	if badName >= 0 {
		problems = append(problems, fmt.Sprintf("spec.serviceAccounts[%d] is neither a ServiceAccount name nor %q", badName, wildcard))
	}
	if repeated >= 0 {
		problems = append(problems, fmt.Sprintf("spec.serviceAccounts[%d] repeats spec.serviceAccounts[%d]", repeated, first[sas[repeated]]))
	}
	if _, all := first[wildcard]; all && len(first) > 1 {
		problems = append(problems, fmt.Sprintf("spec.serviceAccounts lists %q, every ServiceAccount of the namespace, beside other names: list %q alone or only names", wildcard, wildcard))
	}
	if !spec.MaxDataClass.Valid() {
		problems = append(problems, "spec.maxDataClass is none of Public, Internal, Confidential, Restricted")
	}
	switch spec.ApprovalMode {
	case "", mcpv1alpha1.ApprovalPerson, mcpv1alpha1.ApprovalClientElicitation:
	default:
		problems = append(problems, "spec.approvalMode is neither Person nor ClientElicitation")
	}
	for i, e := range spec.ApprovalRequiredFor {
		if !knownEffect(e) {
			problems = append(problems, fmt.Sprintf("spec.approvalRequiredFor[%d] is none of Write, Destructive, NonIdempotent, OpenWorld", i))
		}
	}
	for i, ec := range spec.MaxDataClassByEffect {
		if !knownEffect(ec.Effect) {
			problems = append(problems, fmt.Sprintf("spec.maxDataClassByEffect[%d].effect is none of Write, Destructive, NonIdempotent, OpenWorld", i))
		}
		if !ec.MaxDataClass.Valid() {
			problems = append(problems, fmt.Sprintf("spec.maxDataClassByEffect[%d].maxDataClass is none of Public, Internal, Confidential, Restricted", i))
		}
	}
	return strings.Join(problems, "; ")
}

// knownEffect reports whether e is one of the ToolEffect values.
func knownEffect(e mcpv1alpha1.ToolEffect) bool {
	switch e {
	case mcpv1alpha1.EffectWrite, mcpv1alpha1.EffectDestructive, mcpv1alpha1.EffectNonIdempotent, mcpv1alpha1.EffectOpenWorld:
		return true
	}
	return false
}

// Caller is whom an McpAccessPolicy may name: a ServiceAccount of
// Namespace, or a person (User and Groups, as the gateway maps an OAuth
// access token) calling at Namespace's endpoint, whose ServiceAccount is
// empty.
type Caller struct {
	Namespace      string
	ServiceAccount string
	User           string
	Groups         []string
}

// Names reports whether an McpAccessPolicy applies to a caller of its own
// namespace: a ServiceAccount the policy lists, or every one by the
// wildcard; a person the policy lists in users, or a member of a group it
// lists in groups. The wildcard names ServiceAccounts only. A policy of
// another namespace names nobody there.
func Names(p *mcpv1alpha1.McpAccessPolicy, c Caller) bool {
	if p.Namespace != c.Namespace {
		return false
	}
	if c.ServiceAccount != "" {
		for _, sa := range p.Spec.ServiceAccounts {
			if sa == wildcard || sa == c.ServiceAccount {
				return true
			}
		}
		return false
	}
	if c.User != "" && slices.Contains(p.Spec.Users, c.User) {
		return true
	}
	for _, g := range c.Groups {
		if slices.Contains(p.Spec.Groups, g) {
			return true
		}
	}
	return false
}

// Ceiling is what the McpAccessPolicies of a caller's namespace hold its
// calls to: the highest data class of a tool it may use, and the effects
// whose tools need approval, both keyed on the tool's reviewed effects.
// The zero value names no policy: the Public ceiling, no approval added.
type Ceiling struct {
	policies []mcpv1alpha1.McpAccessPolicy
	caller   Caller
}

// CeilingOf is the ceiling of caller under policies (those of other
// namespaces name nobody there).
func CeilingOf(policies []mcpv1alpha1.McpAccessPolicy, caller Caller) Ceiling {
	return Ceiling{policies: policies, caller: caller}
}

// For is the highest data class of a tool with effects e the caller may
// use: the highest, among the policies that name it, of each policy's
// maxDataClass lowered by the maxDataClassByEffect entries e matches; Public
// when no policy names it.
func (c Ceiling) For(e Effects) mcpv1alpha1.DataClass {
	ceiling := mcpv1alpha1.DataClassPublic
	for i := range c.policies {
		p := &c.policies[i]
		if !p.Spec.MaxDataClass.Valid() || !Names(p, c.caller) {
			continue
		}
		ceiling = mcpv1alpha1.MaxDataClass(ceiling, policyCeiling(&p.Spec, e))
	}
	return ceiling
}

// policyCeiling is one policy's ceiling for a tool with effects e. An
// entry whose class is unknown lowers the ceiling to Public: it never
// raises anything.
func policyCeiling(spec *mcpv1alpha1.McpAccessPolicySpec, e Effects) mcpv1alpha1.DataClass {
	ceiling := spec.MaxDataClass
	for _, ec := range spec.MaxDataClassByEffect {
		if !e.Has(ec.Effect) {
			continue
		}
		c := ec.MaxDataClass
		if !c.Valid() {
			c = mcpv1alpha1.DataClassPublic
		}
		if c.Rank() < ceiling.Rank() {
			ceiling = c
		}
	}
	return ceiling
}

// ApprovalFor reports whether a policy that names the caller requires
// approval of its calls of a tool with effects e (approvalRequiredFor).
func (c Ceiling) ApprovalFor(e Effects) bool {
	for i := range c.policies {
		p := &c.policies[i]
		if len(p.Spec.ApprovalRequiredFor) > 0 && e.HasAny(p.Spec.ApprovalRequiredFor) && Names(p, c.caller) {
			return true
		}
	}
	return false
}
