package gateway

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// effectsGateway is a replica serving team/docs.echo of the given server,
// defined as hashA and reviewed as reviewed (nil: not reviewed), with the
// server claiming in its hints that the tool is read-only, idempotent,
// non-destructive and closed-world; approved is the approved definition
// and current the one the import recorded.
func effectsGateway(t *testing.T, srv *mcpv1alpha1.McpServer, approved, current string, reviewed *mcpv1alpha1.ReviewedEffects, more ...client.Object) *personGateway {
	t.Helper()
	yes, no := true, false
	tl := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "docs.echo", Generation: 1},
		Spec: mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: "echo",
			ApprovedDefinitionHash: approved, ReviewedEffects: reviewed},
	}
	tl.Status.LocalName, tl.Status.DefinitionHash = "mcp_docs_echo", current
	tl.Status.Hints = &mcpv1alpha1.ToolHints{ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no}
	tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: metav1.Now()}}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(more, srv, tl)...).Build()
	o.Authz = allowList{"docs.echo": true}
	store := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&mcpv1alpha1.McpCallApproval{}).Build()
	o.Approvals = store
	o.ApprovalKeys = approvals.StaticKeys{Current: []byte(strings.Repeat("k", 32))}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &personGateway{g: g, store: store, key: client.ObjectKeyFromObject(tl),
		id: &authn.Identity{Username: "system:serviceaccount:team:agent", Namespace: "team", ServiceAccount: "agent"}}
}

func readOnlyReview(hash string) *mcpv1alpha1.ReviewedEffects {
	yes, no := true, false
	return &mcpv1alpha1.ReviewedEffects{DefinitionHash: hash, ReadOnly: &yes, OpenWorld: &no}
}

// waits reports whether the call's answer is that it waits for a person.
func waits(answer *mcp.CallToolResult) bool {
	return answer != nil && strings.Contains(textOfResult(answer), "waits for a person's approval")
}

// The attack of issue #32 item 5: a server that requires approval exempts
// read-only tools, and a hostile server calls its tool read-only in its
// hints. The hints decide nothing: the call waits for a person until a
// person reviewed the tool as read-only; once the server's definition
// changes and a person approves the new one without reviewing its effects
// again, the call waits for a person again.
func TestTheServersHintsNeverLiftApprovalAReviewDoes(t *testing.T) {
	srv := server("team", "docs", mcpv1alpha1.DataClassPublic, true)
	srv.Spec.ApprovalByEffect = &mcpv1alpha1.EffectApproval{ExemptReadOnly: true}
	if answer := effectsGateway(t, srv, hashA, hashA, nil).call(t, `{"q":"x"}`); !waits(answer) {
		t.Fatalf("a tool only its server calls read-only answered %q, want it to wait for a person's approval", textOfResult(answer))
	}
	if answer := effectsGateway(t, srv, hashA, hashA, readOnlyReview(hashA)).call(t, `{"q":"x"}`); answer != nil {
		t.Fatalf("a tool a person reviewed as read-only answered %q, want it called without approval", textOfResult(answer))
	}
	if answer := effectsGateway(t, srv, hashB, hashB, readOnlyReview(hashA)).call(t, `{"q":"x"}`); !waits(answer) {
		t.Fatalf("a newly approved definition whose effects nobody reviewed answered %q, want it to wait for a person's approval", textOfResult(answer))
	}
	// A review can only lift the server's own requirement.
	tight := srv.DeepCopy()
	tight.Spec.ApprovalByEffect.ExemptReadOnly = false
	if answer := effectsGateway(t, tight, hashA, hashA, readOnlyReview(hashA)).call(t, `{"q":"x"}`); !waits(answer) {
		t.Fatalf("without exemptReadOnly a reviewed read-only tool answered %q, want it to wait for a person's approval", textOfResult(answer))
	}
}

// A server that requires no approval can require it for destructive
// tools: an unreviewed tool is destructive whatever its hints say, a
// tool reviewed as non-destructive is not.
func TestApprovalRequiredForDestructiveToolsIsKeyedOnTheReview(t *testing.T) {
	srv := server("team", "docs", mcpv1alpha1.DataClassPublic, false)
	srv.Spec.ApprovalByEffect = &mcpv1alpha1.EffectApproval{RequiredFor: []mcpv1alpha1.ToolEffect{mcpv1alpha1.EffectDestructive}}
	if answer := effectsGateway(t, srv, hashA, hashA, nil).call(t, `{"q":"x"}`); !waits(answer) {
		t.Fatalf("an unreviewed tool its server calls non-destructive answered %q, want it to wait for a person's approval", textOfResult(answer))
	}
	no := false
	reviewed := &mcpv1alpha1.ReviewedEffects{DefinitionHash: hashA, Destructive: &no}
	if answer := effectsGateway(t, srv, hashA, hashA, reviewed).call(t, `{"q":"x"}`); answer != nil {
		t.Fatalf("a tool reviewed as non-destructive answered %q, want it called without approval", textOfResult(answer))
	}
}

// An access policy adds approval for effects and lowers the ceiling for
// them; neither is lifted by what the server says.
func TestAPolicyKeysApprovalAndCeilingOnReviewedEffects(t *testing.T) {
	srv := server("team", "docs", mcpv1alpha1.DataClassInternal, false)
	p := policy("team", mcpv1alpha1.DataClassInternal, "agent")
	p.Spec.ApprovalRequiredFor = []mcpv1alpha1.ToolEffect{mcpv1alpha1.EffectOpenWorld}
	if answer := effectsGateway(t, srv, hashA, hashA, nil, &p).call(t, `{"q":"x"}`); !waits(answer) {
		t.Fatalf("an unreviewed tool under a policy requiring approval of open-world tools answered %q, want it to wait", textOfResult(answer))
	}
	if answer := effectsGateway(t, srv, hashA, hashA, readOnlyReview(hashA), &p).call(t, `{"q":"x"}`); answer != nil {
		t.Fatalf("a tool reviewed as closed-world answered %q, want it called without approval", textOfResult(answer))
	}
	q := policy("team", mcpv1alpha1.DataClassInternal, "agent")
	q.Spec.MaxDataClassByEffect = []mcpv1alpha1.EffectCeiling{{Effect: mcpv1alpha1.EffectWrite, MaxDataClass: mcpv1alpha1.DataClassPublic}}
	answer := effectsGateway(t, srv, hashA, hashA, nil, &q).call(t, `{"q":"x"}`)
	if answer == nil || !strings.Contains(textOfResult(answer), "class") {
		t.Fatalf("an unreviewed Internal tool under a Public ceiling for writes answered %q, want a refusal above the ceiling", textOfResult(answer))
	}
	if answer := effectsGateway(t, srv, hashA, hashA, readOnlyReview(hashA), &q).call(t, `{"q":"x"}`); answer != nil {
		t.Fatalf("a reviewed read-only Internal tool under an Internal ceiling answered %q, want it called", textOfResult(answer))
	}
}

// Agents are shown what the gate takes the tool to do: the unsafe answers
// while nobody reviewed it, whatever the server's hints say, and the
// review once there is one.
func TestAgentsSeeTheReviewedEffectsNotTheServersHints(t *testing.T) {
	srv := server("team", "docs", mcpv1alpha1.DataClassPublic, false)
	for _, tc := range []struct {
		name     string
		reviewed *mcpv1alpha1.ReviewedEffects
		readOnly bool
		destr    bool
		open     bool
	}{
		{"unreviewed", nil, false, true, true},
		{"reviewed for another definition", readOnlyReview(hashB), false, true, true},
		{"reviewed read-only and closed-world", readOnlyReview(hashA), true, false, false},
	} {
		p := effectsGateway(t, srv, hashA, hashA, tc.reviewed)
		offers, err := p.g.visibleTools(ctx, p.id)
		if err != nil || len(offers) != 1 {
			t.Fatalf("%s: visible %d tools (%v), want 1", tc.name, len(offers), err)
		}
		v, err := p.g.views.Get(offers[0].tool)
		if err != nil {
			t.Fatal(err)
		}
		a := sdkTool("mcp_docs_echo", v).Annotations
		if a.ReadOnlyHint != tc.readOnly || *a.DestructiveHint != tc.destr || *a.OpenWorldHint != tc.open {
			t.Errorf("%s: agents see readOnly=%t destructive=%t openWorld=%t, want %t %t %t", tc.name, a.ReadOnlyHint, *a.DestructiveHint, *a.OpenWorldHint, tc.readOnly, tc.destr, tc.open)
		}
	}
}
