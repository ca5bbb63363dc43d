package governance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func TestSharedWithNeedsTheOwnersGrant(t *testing.T) {
	srv := func(s *mcpv1alpha1.ServerSharing) *mcpv1alpha1.McpServer {
		return &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "docs"}, Spec: mcpv1alpha1.McpServerSpec{Sharing: s}}
	}
	team := map[string]string{"team": "a"}
	sel := func(e ...mcpv1alpha1.NamespaceSelectorRequirement) *mcpv1alpha1.ServerSharing {
		return &mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: e}}
	}
	for _, tc := range []struct {
		name   string
		srv    *mcpv1alpha1.McpServer
		ns     string
		labels map[string]string
		want   bool
	}{
		{"no server", nil, "a", team, false},
		{"not shared", srv(nil), "a", team, false},
		{"empty sharing", srv(&mcpv1alpha1.ServerSharing{}), "a", team, false},
		{"named", srv(&mcpv1alpha1.ServerSharing{Namespaces: []string{"a"}}), "a", nil, true},
		{"another named", srv(&mcpv1alpha1.ServerSharing{Namespaces: []string{"b"}}), "a", team, false},
		{"the owner's own namespace is not a consumer", srv(&mcpv1alpha1.ServerSharing{Namespaces: []string{"platform"}}), "platform", nil, false},
		{"selected by label", srv(&mcpv1alpha1.ServerSharing{NamespaceSelector: sel(mcpv1alpha1.NamespaceSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}).NamespaceSelector}), "a", team, true},
		{"label differs", srv(&mcpv1alpha1.ServerSharing{NamespaceSelector: sel(mcpv1alpha1.NamespaceSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"b"}}).NamespaceSelector}), "a", team, false},
		{"namespace unknown: labels do not match", srv(&mcpv1alpha1.ServerSharing{NamespaceSelector: sel(mcpv1alpha1.NamespaceSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}).NamespaceSelector}), "a", nil, false},
		{"empty selector selects all", srv(&mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{}}), "a", team, true},
		{"namespace unknown: not even the empty selector selects it", srv(&mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{}}), "a", nil, false},
		{"expression In", srv(sel(mcpv1alpha1.NamespaceSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}})), "a", team, true},
		{"expression DoesNotExist", srv(sel(mcpv1alpha1.NamespaceSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpDoesNotExist})), "a", team, false},
		{"a selector that cannot be evaluated grants nothing", srv(sel(mcpv1alpha1.NamespaceSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpIn})), "a", team, false},
		{"a bad operator grants nothing", srv(sel(mcpv1alpha1.NamespaceSelectorRequirement{Key: "team", Operator: "Matches", Values: []string{"a"}})), "a", team, false},
	} {
		if got := SharedWith(tc.srv, tc.ns, tc.labels); got != tc.want {
			t.Errorf("%s: SharedWith = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// A namespace the reader does not know (missing from the cache, or gone)
// has no labels to match: a selector of NotIn or DoesNotExist, which an
// empty label set satisfies, must not grant it.
func TestAnUnknownNamespaceMatchesNoNegativeSelector(t *testing.T) {
	for _, op := range []mcpv1alpha1.NamespaceSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"untrusted"}},
		{Key: "quarantined", Operator: metav1.LabelSelectorOpDoesNotExist},
	} {
		srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "docs"},
			Spec: mcpv1alpha1.McpServerSpec{Sharing: &mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{op}}}}}
		if SharedWith(srv, "not-in-the-cache", nil) {
			t.Errorf("%s %s granted a namespace whose labels are unknown", op.Key, op.Operator)
		}
		if !SharedWith(srv, "known", map[string]string{"kubernetes.io/metadata.name": "known"}) {
			t.Errorf("%s %s did not grant a known namespace it matches", op.Key, op.Operator)
		}
	}
}

// The attack: a tenant who may update its own namespace adds the label
// the owner's selector asks for. With the administrator's reserved prefix,
// a selector on any other key grants nothing, whatever the labels say;
// one on a reserved key still grants (only administrators set those).
func TestATenantsOwnLabelDoesNotMatchUnderAReservedPrefix(t *testing.T) {
	trust := SelectorTrust{KeyPrefix: "sharing.mcp.catalog.dev/"}
	share := func(key string) *mcpv1alpha1.McpServer {
		return &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "docs"},
			Spec: mcpv1alpha1.McpServerSpec{Sharing: &mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{
				MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"docs"}}}}}}}
	}
	// The tenant labelled its namespace itself.
	selfLabelled := map[string]string{"kubernetes.io/metadata.name": "tenant", "team": "docs", "sharing.mcp.catalog.dev/team": "x"}
	if !SharedWith(share("team"), "tenant", selfLabelled) {
		t.Fatal("without a reserved prefix the selector should match (the risk this trust removes)")
	}
	if trust.SharedWith(share("team"), "tenant", selfLabelled) {
		t.Error("a selector on a key outside the reserved prefix granted a namespace its tenant labelled")
	}
	if trust.SelectorProblem(share("team").Spec.Sharing.NamespaceSelector) == "" {
		t.Error("no problem reported for a key outside the reserved prefix")
	}
	admin := map[string]string{"kubernetes.io/metadata.name": "tenant", "sharing.mcp.catalog.dev/team": "docs"}
	if !trust.SharedWith(share("sharing.mcp.catalog.dev/team"), "tenant", admin) {
		t.Error("a selector on a reserved key did not grant the namespace an administrator labelled")
	}
	if !SelectsEveryNamespace(&mcpv1alpha1.McpServer{Spec: mcpv1alpha1.McpServerSpec{Sharing: &mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{}}}}) ||
		SelectsEveryNamespace(share("team")) {
		t.Error("SelectsEveryNamespace does not tell {} from a selector with a key")
	}
}

func TestAConsumerNarrowsAndNeverWidens(t *testing.T) {
	srv := &mcpv1alpha1.McpServer{Spec: mcpv1alpha1.McpServerSpec{DataClass: mcpv1alpha1.DataClassConfidential, ApprovalRequired: ptr(true)}}
	tool := &mcpv1alpha1.McpTool{Spec: mcpv1alpha1.McpToolSpec{RemoteName: "search"}}
	ss := &mcpv1alpha1.McpSharedServer{Spec: mcpv1alpha1.McpSharedServerSpec{ApprovalRequired: false, MaxDataClass: mcpv1alpha1.DataClassRestricted}}

	class, approval := SharedEffective(srv, tool, ss)
	if class != mcpv1alpha1.DataClassConfidential || !approval {
		t.Errorf("the consumer's approvalRequired false lifted the owner's requirement: %s %t", class, approval)
	}
	if got := SharedCeiling(mcpv1alpha1.DataClassInternal, ss); got != mcpv1alpha1.DataClassInternal {
		t.Errorf("a higher maxDataClass raised the caller's ceiling to %s", got)
	}
	ss.Spec.MaxDataClass = mcpv1alpha1.DataClassPublic
	if got := SharedCeiling(mcpv1alpha1.DataClassRestricted, ss); got != mcpv1alpha1.DataClassPublic {
		t.Errorf("a lower maxDataClass did not lower the ceiling: %s", got)
	}
	srv.Spec.ApprovalRequired = ptr(false)
	ss.Spec.ApprovalRequired = true
	if _, approval := SharedEffective(srv, tool, ss); !approval {
		t.Error("the consumer's approvalRequired true did not require approval")
	}
	ss.Spec.DisabledTools = []string{"search"}
	if !DisabledByConsumer(ss, "search") || DisabledByConsumer(ss, "other") {
		t.Error("disabledTools does not disable exactly the tools it names")
	}
}

// The approval mode a consumer's McpAccessPolicy chooses narrows the
// owner's terms and never widens them: ClientElicitation counts for the
// owner's requirement only when the owner lists it, and the owner's
// people decide unless the owner says the consumer's do.
func TestAConsumerNarrowsTheOwnersApprovalTermsAndNeverWidensThem(t *testing.T) {
	person, client := mcpv1alpha1.ApprovalPerson, mcpv1alpha1.ApprovalClientElicitation
	srv := func(s *mcpv1alpha1.ServerSharing) *mcpv1alpha1.McpServer {
		return &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "docs"}, Spec: mcpv1alpha1.McpServerSpec{Sharing: s}}
	}
	for _, tc := range []struct {
		name          string
		srv           *mcpv1alpha1.McpServer
		ownerRequires bool
		chosen        mcpv1alpha1.ApprovalMode
		mode          mcpv1alpha1.ApprovalMode
		ownerApproves bool
	}{
		{"the attack: the consumer opts into ClientElicitation, the owner's default", srv(&mcpv1alpha1.ServerSharing{}), true, client, person, true},
		{"no sharing read (nil): the safe defaults", srv(nil), true, client, person, true},
		{"Person listed alone", srv(&mcpv1alpha1.ServerSharing{ApprovalModes: []mcpv1alpha1.ApprovalMode{person}}), true, client, person, true},
		{"the owner accepts ClientElicitation", srv(&mcpv1alpha1.ServerSharing{ApprovalModes: []mcpv1alpha1.ApprovalMode{person, client}}), true, client, client, true},
		{"accepted, but the consumer chose Person", srv(&mcpv1alpha1.ServerSharing{ApprovalModes: []mcpv1alpha1.ApprovalMode{person, client}}), true, person, person, true},
		{"the owner's people by name", srv(&mcpv1alpha1.ServerSharing{Approvers: mcpv1alpha1.SharedApproversOwner}), true, person, person, true},
		{"the owner lets the consumer's people decide", srv(&mcpv1alpha1.ServerSharing{Approvers: mcpv1alpha1.SharedApproversConsumer}), true, client, person, false},
		{"the owner does not require approval: the consumer's own terms", srv(&mcpv1alpha1.ServerSharing{}), false, client, client, false},
	} {
		terms := SharedApprovalTerms(tc.srv, tc.ownerRequires)
		if got := terms.Mode(tc.chosen); got != tc.mode {
			t.Errorf("%s: mode %s, want %s", tc.name, got, tc.mode)
		}
		if got := terms.OwnerApproves(); got != tc.ownerApproves {
			t.Errorf("%s: the owner's people decide: %t, want %t", tc.name, got, tc.ownerApproves)
		}
		if tc.ownerRequires && terms.Owner != "platform" {
			t.Errorf("%s: the terms name the owner %q", tc.name, terms.Owner)
		}
	}
	// A call of the namespace's own tool has no owner's terms: its
	// namespace's policy decides alone.
	if got := (ApprovalTerms{}).Mode(client); got != client {
		t.Errorf("no terms turned the namespace's own ClientElicitation into %s", got)
	}
}

func TestInvalidSharedServer(t *testing.T) {
	ss := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}, Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: "team", Name: "docs"}}}
	if InvalidSharedServer(ss) == "" {
		t.Error("an McpSharedServer naming its own namespace is valid")
	}
	ss.Spec.Server.Namespace = "platform"
	if p := InvalidSharedServer(ss); p != "" {
		t.Errorf("a valid McpSharedServer is invalid: %s", p)
	}
	ss.Spec.MaxDataClass = "Secret"
	if InvalidSharedServer(ss) == "" {
		t.Error("an unknown maxDataClass is valid")
	}
}
