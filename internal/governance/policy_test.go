package governance

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func TestInvalidPolicy(t *testing.T) {
	spec := func(class mcpv1alpha1.DataClass, mode mcpv1alpha1.ApprovalMode, sas ...string) *mcpv1alpha1.McpAccessPolicySpec {
		return &mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: sas, MaxDataClass: class, ApprovalMode: mode}
	}
	const internal, person = mcpv1alpha1.DataClassInternal, mcpv1alpha1.ApprovalPerson
	for _, tc := range []struct {
		name string
		spec *mcpv1alpha1.McpAccessPolicySpec
		// want lists the phrases the answer holds; none means valid.
		want []string
	}{
		{"one name", spec(internal, person, "support-agent"), nil},
		{"dotted names", spec(mcpv1alpha1.DataClassRestricted, mcpv1alpha1.ApprovalClientElicitation, "a.b", "c"), nil},
		{"the wildcard alone", spec(mcpv1alpha1.DataClassPublic, person, "*"), nil},
		{"no approval mode means Person", spec(internal, "", "bot"), nil},
		{"no names", spec(internal, person), []string{"names no one"}},
		{"users and groups only", &mcpv1alpha1.McpAccessPolicySpec{Users: []string{"alice@example.test"}, Groups: []string{"oidc:dev"}, MaxDataClass: internal}, nil},
		{"a user in system:", &mcpv1alpha1.McpAccessPolicySpec{Users: []string{"system:admin"}, MaxDataClass: internal}, []string{"spec.users[0] is empty or in system:"}},
		{"an empty group", &mcpv1alpha1.McpAccessPolicySpec{Groups: []string{""}, MaxDataClass: internal}, []string{"spec.groups[0] is empty"}},
		{"a name no ServiceAccount can have", spec(internal, person, "bot", "Bot_1"), []string{"spec.serviceAccounts[1] is neither a ServiceAccount name"}},
		{"a user name", spec(internal, person, "system:serviceaccount:team:bot"), []string{"spec.serviceAccounts[0] is neither"}},
		{"a name too long", spec(internal, person, strings.Repeat("a", 254)), []string{"spec.serviceAccounts[0] is neither"}},
		{"a name twice", spec(internal, person, "a", "b", "a"), []string{"spec.serviceAccounts[2] repeats spec.serviceAccounts[0]"}},
		{"the wildcard beside a name", spec(internal, person, "bot", "*"), []string{`spec.serviceAccounts lists "*"`}},
		{"the wildcard twice is a repeat, not a narrowing", spec(internal, person, "*", "*"), []string{"spec.serviceAccounts[1] repeats spec.serviceAccounts[0]"}},
		{"an unknown class", spec("Secret", person, "bot"), []string{"spec.maxDataClass is none of"}},
		{"no class", spec("", person, "bot"), []string{"spec.maxDataClass is none of"}},
		{"an unknown approval mode", spec(internal, "Auto", "bot"), []string{"spec.approvalMode is neither"}},
		{"every problem at once", spec("Secret", "Auto", "*", "x_", "x_"), []string{
			"spec.serviceAccounts[1] is neither", "spec.serviceAccounts[2] repeats spec.serviceAccounts[1]",
			`lists "*"`, "spec.maxDataClass", "spec.approvalMode",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InvalidPolicy(tc.spec)
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("InvalidPolicy = %q, want valid", got)
				}
				return
			}
			if got == "" {
				t.Fatalf("InvalidPolicy = valid, want %q", tc.want)
			}
			if n := len(strings.Split(got, "; ")); n != len(tc.want) {
				t.Errorf("InvalidPolicy = %q: %d problems, want %d", got, n, len(tc.want))
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("InvalidPolicy = %q, want it to say %q", got, w)
				}
			}
		})
	}
}

func TestNamesIsTheAccountOrTheWildcardOfThePolicysNamespace(t *testing.T) {
	p := func(ns string, sas ...string) *mcpv1alpha1.McpAccessPolicy {
		return &mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: sas}}
	}
	for _, tc := range []struct {
		name   string
		policy *mcpv1alpha1.McpAccessPolicy
		want   bool
	}{
		{"named", p("team", "other", "bot"), true},
		{"wildcard", p("team", "*"), true},
		{"someone else", p("team", "other"), false},
		{"another namespace, even by wildcard", p("elsewhere", "bot", "*"), false},
	} {
		if got := Names(tc.policy, Caller{Namespace: "team", ServiceAccount: "bot"}); got != tc.want {
			t.Errorf("%s: Names = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// A person is named by user or group, never by the ServiceAccount
// wildcard, and only in the policy's namespace.
func TestNamesAPersonByUserOrGroupNeverByTheWildcard(t *testing.T) {
	p := func(ns string, spec mcpv1alpha1.McpAccessPolicySpec) *mcpv1alpha1.McpAccessPolicy {
		return &mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: spec}
	}
	alice := Caller{Namespace: "team", User: "alice@example.test", Groups: []string{"oidc:dev"}}
	for _, tc := range []struct {
		name   string
		policy *mcpv1alpha1.McpAccessPolicy
		want   bool
	}{
		{"by user", p("team", mcpv1alpha1.McpAccessPolicySpec{Users: []string{"alice@example.test"}}), true},
		{"by group", p("team", mcpv1alpha1.McpAccessPolicySpec{Groups: []string{"oidc:ops", "oidc:dev"}}), true},
		{"the ServiceAccount wildcard", p("team", mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"*"}}), false},
		{"a ServiceAccount of her name", p("team", mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"alice"}}), false},
		{"someone else", p("team", mcpv1alpha1.McpAccessPolicySpec{Users: []string{"bob@example.test"}, Groups: []string{"oidc:ops"}}), false},
		{"another namespace", p("elsewhere", mcpv1alpha1.McpAccessPolicySpec{Users: []string{"alice@example.test"}}), false},
	} {
		if got := Names(tc.policy, alice); got != tc.want {
			t.Errorf("%s: Names = %t, want %t", tc.name, got, tc.want)
		}
	}
	sa := Caller{Namespace: "team", ServiceAccount: "bot", User: "system:serviceaccount:team:bot"}
	if Names(p("team", mcpv1alpha1.McpAccessPolicySpec{Users: []string{"system:serviceaccount:team:bot"}}), sa) {
		t.Error("a ServiceAccount was named by users")
	}
}
