package governance

import (
	"fmt"
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
	if len(sas) == 0 {
		problems = append(problems, "spec.serviceAccounts names no ServiceAccount")
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
	return strings.Join(problems, "; ")
}

// Names reports whether an McpAccessPolicy applies to a ServiceAccount of
// its own namespace: the policy lists the account's name, or the wildcard.
// A policy of another namespace names nobody there.
func Names(p *mcpv1alpha1.McpAccessPolicy, namespace, serviceAccount string) bool {
	if p.Namespace != namespace {
		return false
	}
	for _, sa := range p.Spec.ServiceAccounts {
		if sa == wildcard || sa == serviceAccount {
			return true
		}
	}
	return false
}
