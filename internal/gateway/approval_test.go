package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
)

var ctx = context.Background()

func TestApprovalModeIsPersonUnlessAPolicyNamingTheCallerOptsIn(t *testing.T) {
	bot := &authn.Identity{Namespace: "team", ServiceAccount: "bot", Username: "system:serviceaccount:team:bot"}
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

// personGateway is a gateway whose one tool, team/docs.echo, needs a
// person's approval for every call, with approvals kept in a fake API
// server; call decides one call of it up to the approval stage.
type personGateway struct {
	g     *Gateway
	store client.Client
	id    *authn.Identity
	key   client.ObjectKey
	// via is the McpSharedServer the tool is called through, "" for a
	// tool of the caller's namespace.
	via string
}

func newPersonGateway(t *testing.T) *personGateway {
	t.Helper()
	return newApprovalGateway(t, nil)
}

// newApprovalGateway is a replica of that gateway keeping approvals in
// store (a new fake API server when nil), with more objects (access
// policies) in its cache.
func newApprovalGateway(t *testing.T, store client.Client, more ...client.Object) *personGateway {
	t.Helper()
	const ns = "team"
	tl := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs.echo", Generation: 1},
		Spec:       mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, ApprovedDefinitionHash: hashA},
	}
	tl.Status.LocalName, tl.Status.DefinitionHash = "mcp_docs_echo", hashA
	tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: metav1.Now()}}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(more, server(ns, "docs", mcpv1alpha1.DataClassPublic, true), tl)...).Build()
	o.Authz = allowList{"docs.echo": true}
	if store == nil {
		store = fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&mcpv1alpha1.McpCallApproval{}).Build()
	}
	o.Approvals = store
	o.ApprovalKeys = approvals.StaticKeys{Current: []byte(strings.Repeat("k", 32))}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &personGateway{g: g, store: store, key: client.ObjectKeyFromObject(tl),
		id: &authn.Identity{Username: "system:serviceaccount:team:agent", Namespace: ns, ServiceAccount: "agent"}}
}

// call makes one call with arguments args up to the approval stage: the
// answer that ends it, or nil when it would be sent.
func (p *personGateway) call(t *testing.T, args string) *mcp.CallToolResult {
	t.Helper()
	return p.callWith(t, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "mcp_docs_echo", Arguments: json.RawMessage(args)}})
}

func (p *personGateway) callWith(t *testing.T, req *mcp.CallToolRequest) *mcp.CallToolResult {
	t.Helper()
	c, answer := p.g.identify(ctx, req, p.id, toolRef{key: p.key, via: p.via})
	if answer != nil {
		t.Fatalf("identify refused: %+v", answer)
	}
	if answer := p.g.decide(ctx, p.id, c); answer != nil {
		return answer
	}
	answer, err := p.g.approve(ctx, req, p.id, c)
	if err != nil {
		t.Fatal(err)
	}
	return answer
}

func (p *personGateway) list(t *testing.T) []mcpv1alpha1.McpCallApproval {
	t.Helper()
	var l mcpv1alpha1.McpCallApprovalList
	if err := p.store.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func textOfResult(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// Whoever may create McpCallApprovals (the approver role may not, but a
// namespace admin may) cannot lock an agent out by filling its pending
// limit with objects the gateway did not seal: they are not counted.
func TestUnsealedApprovalsDoNotCountTowardTheCallersLimit(t *testing.T) {
	p := newPersonGateway(t)
	for i := range maxPendingPerCaller + 5 {
		forged := &mcpv1alpha1.McpCallApproval{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "forged-" + strconv.Itoa(i), Labels: map[string]string{LabelCaller: callerKey(p.id.Username)}},
			Spec: mcpv1alpha1.McpCallApprovalSpec{Tool: "docs.other", LocalName: "mcp_docs_other", Server: "docs", Caller: p.id.Username,
				DataClass: mcpv1alpha1.DataClassPublic, ArgumentsHash: "sha256:" + strings.Repeat("0", 64), DefinitionHash: hashA,
				ExpiresAt: metav1.NewTime(time.Now().Add(time.Hour)), Seal: "forged", Decision: mcpv1alpha1.CallPending},
		}
		if err := p.store.Create(ctx, forged); err != nil {
			t.Fatal(err)
		}
	}
	answer := p.call(t, `{"q":"x"}`)
	if got := textOfResult(answer); !strings.Contains(got, "waits for a person's approval") {
		t.Fatalf("the call answered %q, want it to wait for a new approval", got)
	}
	sealed := 0
	for i := range p.list(t) {
		if approvals.Sealed(ctx, p.g.approvalKeys, &p.list(t)[i]) {
			sealed++
		}
	}
	if sealed != 1 {
		t.Fatalf("%d sealed approvals, want the one the call created", sealed)
	}
	// The gateway's own pending approvals still count.
	for i := range maxPendingPerCaller - 1 {
		p.call(t, `{"q":"`+strconv.Itoa(i)+`"}`)
	}
	if got := textOfResult(p.call(t, `{"q":"one too many"}`)); !strings.Contains(got, "calls waiting for approval") {
		t.Fatalf("a call past the limit answered %q, want the limit named", got)
	}
}

// A client's approval answer in the ClientElicitation opt-in opens one
// call across every replica: replayed to another replica (any replica
// may serve any request), it is refused there too, because the spent mark
// is in the API, not in the memory of the replica that took it.
func TestASpentClientAnswerIsRefusedOnEveryReplica(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	shared := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&mcpv1alpha1.McpCallApproval{}).Build()
	optIn := policy("team", mcpv1alpha1.DataClassPublic, "agent")
	optIn.Spec.ApprovalMode = mcpv1alpha1.ApprovalClientElicitation
	first, second := newApprovalGateway(t, shared, &optIn), newApprovalGateway(t, shared, optIn.DeepCopy())

	const args = `{"q":"x"}`
	_, hash, err := arguments(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	state := approvals.State{Caller: first.id.UID + "/" + first.id.Username, Tool: first.key.String(), Definition: hashA, Arguments: hash,
		Expires: time.Now().Add(approvals.StateWindow).Unix(), Nonce: approvals.NewNonce()}
	token, err := first.g.approver.Sign(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	answered := func() *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "mcp_docs_echo", Arguments: json.RawMessage(args),
			RequestState:   token,
			InputResponses: mcp.InputResponseMap{approvalInput: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}}}
	}
	if answer := first.callWith(t, answered()); answer != nil {
		t.Fatalf("the first use of an approved answer was refused: %q", textOfResult(answer))
	}
	for name, replica := range map[string]*personGateway{"the same replica": first, "another replica": second} {
		if got := textOfResult(replica.callWith(t, answered())); !strings.Contains(got, "already used") {
			t.Errorf("%s: the replayed answer got %q, want it refused as used", name, got)
		}
	}
	used := first.list(t)
	if len(used) != 1 || used[0].Status.ConsumedAt == nil || !strings.HasPrefix(used[0].Name, governance.SpentAnswerPrefix) {
		t.Fatalf("the API holds %+v, want one used answer record", used)
	}
}

// A person's approval means something only while the admission policy
// keeps the caller from deciding its own and a decider from forging
// decidedBy. Where the policy is deleted, or its binding names another
// policy (as a kustomize that renames the policy but not the reference
// renders it), an agent with update on approvals could approve itself: the
// gateway refuses to use approvals then, and says why.
func TestPersonApprovalsAreRefusedWhileTheAdmissionPolicyIsNotInForce(t *testing.T) {
	p := newPersonGateway(t)
	const name = "mcp-catalog-call-approvals"
	p.g.admission = approvals.NewAdmissionGuard(p.store, name)
	expect := func(says string) {
		t.Helper()
		p.g.admission = approvals.NewAdmissionGuard(p.store, name) // forgets what it found
		if got := textOfResult(p.call(t, `{"q":"x"}`)); !strings.Contains(got, says) {
			t.Fatalf("the call answered %q, want it to say %q", got, says)
		}
	}
	expect("the ValidatingAdmissionPolicy " + name + " is not installed")
	if len(p.list(t)) != 0 {
		t.Fatal("an approval was created while the policy is missing")
	}

	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := p.store.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	expect("no ValidatingAdmissionPolicyBinding binds")
	for _, b := range []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		// What an older kustomize renders: the binding renamed, its
		// policyName not.
		{ObjectMeta: metav1.ObjectMeta{Name: "stale"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "call-approvals", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}},
		// One that only warns.
		{ObjectMeta: metav1.ObjectMeta{Name: "warn"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}}},
	} {
		if err := p.store.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	expect("no ValidatingAdmissionPolicyBinding binds")

	if err := p.store.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}); err != nil {
		t.Fatal(err)
	}
	expect("waits for a person's approval")

	// Deleted afterwards: the next check refuses again.
	if err := p.store.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	expect("is not installed")
}

func TestApprovedOnlyByAnAcceptedFormWithApproveTrue(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp mcp.InputResponse
		want bool
	}{
		{"accept, approve true", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, true},
		{"accept, approve false", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, false},
		{"accept, approve a string", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": "true"}}, false},
		{"accept, nothing", &mcp.ElicitResult{Action: "accept"}, false},
		{"decline", &mcp.ElicitResult{Action: "decline", Content: map[string]any{"approve": true}}, false},
		{"cancel", &mcp.ElicitResult{Action: "cancel"}, false},
		{"another kind of answer", &mcp.ListRootsResult{}, false}, //nolint:staticcheck // the only other kinds of input response are deprecated ones
		{"none", nil, false},
	} {
		if got := approved(tc.resp); got != tc.want {
			t.Errorf("%s: approved = %v, want %v", tc.name, got, tc.want)
		}
	}
}
