package gateway

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func policy(ns string, class mcpv1alpha1.DataClass, sas ...string) mcpv1alpha1.McpAccessPolicy {
	return mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: sas, MaxDataClass: class},
	}
}

func TestCeilingForIsTheHighestMatchingPolicyAndPublicWithoutOne(t *testing.T) {
	bot := &Identity{Namespace: "team", ServiceAccount: "bot", Username: "system:serviceaccount:team:bot"}
	for _, tc := range []struct {
		name     string
		policies []mcpv1alpha1.McpAccessPolicy
		want     mcpv1alpha1.DataClass
	}{
		{"no policy", nil, mcpv1alpha1.DataClassPublic},
		{"one naming the caller", []mcpv1alpha1.McpAccessPolicy{policy("team", mcpv1alpha1.DataClassInternal, "bot")}, mcpv1alpha1.DataClassInternal},
		{"the highest of several, whatever their order", []mcpv1alpha1.McpAccessPolicy{
			policy("team", mcpv1alpha1.DataClassConfidential, "bot"),
			policy("team", mcpv1alpha1.DataClassInternal, "other", "bot"),
		}, mcpv1alpha1.DataClassConfidential},
		{"a wildcard names every ServiceAccount", []mcpv1alpha1.McpAccessPolicy{policy("team", mcpv1alpha1.DataClassRestricted, "*")}, mcpv1alpha1.DataClassRestricted},
		{"a policy naming someone else does not apply", []mcpv1alpha1.McpAccessPolicy{policy("team", mcpv1alpha1.DataClassRestricted, "other")}, mcpv1alpha1.DataClassPublic},
		{"a policy of another namespace does not apply", []mcpv1alpha1.McpAccessPolicy{policy("elsewhere", mcpv1alpha1.DataClassRestricted, "bot", "*")}, mcpv1alpha1.DataClassPublic},
		{"an unknown class never raises the ceiling", []mcpv1alpha1.McpAccessPolicy{policy("team", "TopSecret", "bot")}, mcpv1alpha1.DataClassPublic},
		{"a lower policy never lowers a higher one", []mcpv1alpha1.McpAccessPolicy{
			policy("team", mcpv1alpha1.DataClassConfidential, "*"),
			policy("team", mcpv1alpha1.DataClassPublic, "bot"),
		}, mcpv1alpha1.DataClassConfidential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ceilingFor(bot, tc.policies); got != tc.want {
				t.Fatalf("ceilingFor = %s, want %s", got, tc.want)
			}
		})
	}
}

const (
	hashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// readyTool is a tool whose definition hashA is the approved one, with the
// given Ready condition.
func readyTool(enabled bool, generation, observed int64, status metav1.ConditionStatus) *mcpv1alpha1.McpTool {
	t := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Generation: generation}, Spec: mcpv1alpha1.McpToolSpec{Enabled: enabled, ApprovedDefinitionHash: hashA}}
	t.Status.DefinitionHash = hashA
	if status != "" {
		t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: status, ObservedGeneration: observed, Reason: "X"}}
	}
	return t
}

func TestServableNeedsEnabledAndReadyForTheCurrentGeneration(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool *mcpv1alpha1.McpTool
		want bool
	}{
		{"enabled and Ready", readyTool(true, 2, 2, metav1.ConditionTrue), true},
		{"disabled, with a Ready condition not yet updated", readyTool(false, 2, 2, metav1.ConditionTrue), false},
		{"Ready False", readyTool(true, 2, 2, metav1.ConditionFalse), false},
		{"Ready Unknown", readyTool(true, 2, 2, metav1.ConditionUnknown), false},
		{"Ready for an older generation", readyTool(true, 3, 2, metav1.ConditionTrue), false},
		{"no Ready condition", readyTool(true, 1, 0, ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := servable(tc.tool); got != tc.want {
				t.Fatalf("servable = %v, want %v", got, tc.want)
			}
		})
	}
}

func withDefinition(t *mcpv1alpha1.McpTool, hash string) *mcpv1alpha1.McpTool {
	t.Status.DefinitionHash = hash
	return t
}

func withApproval(t *mcpv1alpha1.McpTool, hash string) *mcpv1alpha1.McpTool {
	t.Spec.ApprovedDefinitionHash = hash
	return t
}

func TestDetailOfNamesWhyAToolIsNotServable(t *testing.T) {
	drifted := readyTool(true, 2, 2, metav1.ConditionFalse)
	drifted.Status.Conditions[0].Reason = mcpv1alpha1.ReasonDefinitionChanged
	for _, tc := range []struct {
		name   string
		reason string
		tool   *mcpv1alpha1.McpTool
		want   string
		says   string
	}{
		{"disabled", DenyNotServable, readyTool(false, 2, 2, metav1.ConditionTrue), mcpv1alpha1.ReasonDisabled, "it is disabled"},
		{"the Ready reason", DenyNotServable, drifted, mcpv1alpha1.ReasonDefinitionChanged, "its definition changed"},
		{"drifted while Ready still says True", DenyNotServable, withDefinition(readyTool(true, 2, 2, metav1.ConditionTrue), hashB), mcpv1alpha1.ReasonDefinitionChanged, "its definition changed"},
		{"no approval on record while Ready still says True", DenyNotServable, withApproval(readyTool(true, 2, 2, metav1.ConditionTrue), ""), mcpv1alpha1.ReasonDefinitionNotApproved, "no definition of it is approved"},
		{"not yet reconciled", DenyNotServable, readyTool(true, 3, 2, metav1.ConditionTrue), mcpv1alpha1.ReasonProgressing, "(Progressing)"},
		{"never reconciled", DenyNotServable, readyTool(true, 1, 0, ""), mcpv1alpha1.ReasonNotImported, "(NotImported)"},
		{"other reasons have none", DenyForbidden, drifted, "", "RBAC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := detailOf(tc.reason, tc.tool); got != tc.want {
				t.Errorf("detailOf = %q, want %q", got, tc.want)
			}
			if got := refused(tc.reason, tc.tool).message(); !contains(got, tc.says) {
				t.Errorf("message = %q, want it to say %q", got, tc.says)
			}
		})
	}
}

func TestApprovalModeIsPersonUnlessAPolicyNamingTheCallerOptsIn(t *testing.T) {
	bot := &Identity{Namespace: "team", ServiceAccount: "bot", Username: "system:serviceaccount:team:bot"}
	withMode := func(p mcpv1alpha1.McpAccessPolicy, m mcpv1alpha1.ApprovalMode) mcpv1alpha1.McpAccessPolicy {
		p.Spec.ApprovalMode = m
		return p
	}
	for _, tc := range []struct {
		name     string
		policies []mcpv1alpha1.McpAccessPolicy
		want     mcpv1alpha1.ApprovalMode
	}{
		{"no policy", nil, mcpv1alpha1.ApprovalPerson},
		{"a policy without a mode", []mcpv1alpha1.McpAccessPolicy{policy("team", mcpv1alpha1.DataClassInternal, "bot")}, mcpv1alpha1.ApprovalPerson},
		{"an opt-in naming the caller", []mcpv1alpha1.McpAccessPolicy{
			policy("team", mcpv1alpha1.DataClassInternal, "bot"),
			withMode(policy("team", mcpv1alpha1.DataClassPublic, "bot"), mcpv1alpha1.ApprovalClientElicitation),
		}, mcpv1alpha1.ApprovalClientElicitation},
		{"an opt-in for every ServiceAccount", []mcpv1alpha1.McpAccessPolicy{withMode(policy("team", mcpv1alpha1.DataClassPublic, "*"), mcpv1alpha1.ApprovalClientElicitation)}, mcpv1alpha1.ApprovalClientElicitation},
		{"an opt-in for another caller", []mcpv1alpha1.McpAccessPolicy{withMode(policy("team", mcpv1alpha1.DataClassPublic, "other"), mcpv1alpha1.ApprovalClientElicitation)}, mcpv1alpha1.ApprovalPerson},
		{"an opt-in in another namespace", []mcpv1alpha1.McpAccessPolicy{withMode(policy("elsewhere", mcpv1alpha1.DataClassPublic, "bot"), mcpv1alpha1.ApprovalClientElicitation)}, mcpv1alpha1.ApprovalPerson},
	} {
		if got := approvalModeFor(bot, tc.policies); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
