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
	return strings.Join(problems, "; ")
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
