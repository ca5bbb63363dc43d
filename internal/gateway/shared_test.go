package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// The list and the call decide shared tools by the same function: what a
// consuming namespace is offered is exactly what its calls are allowed,
// whichever consent, RBAC rule or narrowing refuses the others.
func TestSharedListOffersExactlyWhatACallIsAllowed(t *testing.T) {
	const owner, consumer = "platform", "team"
	long := strings.Repeat("l", 118)
	tool := func(server, remote string, enabled bool, class mcpv1alpha1.DataClass) *mcpv1alpha1.McpTool {
		name, err := toolname.ObjectName(server, remote)
		if err != nil {
			t.Fatal(err)
		}
		tl := &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: name, Generation: 1},
			Spec: mcpv1alpha1.McpToolSpec{Enabled: enabled, ServerRef: mcpv1alpha1.LocalObjectReference{Name: server},
				RemoteName: remote, ApprovedDefinitionHash: hashA, DataClass: class},
		}
		tl.Status.LocalName, tl.Status.DefinitionHash = toolname.LocalName(server, remote), hashA
		tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "X", LastTransitionTime: metav1.Now()}}
		return tl
	}
	shared := server(owner, "docs", mcpv1alpha1.DataClassPublic, false)
	shared.Spec.Sharing = &mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}}
	accept := func(name, server string, narrow func(*mcpv1alpha1.McpSharedServerSpec)) *mcpv1alpha1.McpSharedServer {
		ss := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: name},
			Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: owner, Name: server}}}
		if narrow != nil {
			narrow(&ss.Spec)
		}
		return ss
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consumer}},
		shared,
		server(owner, "private", mcpv1alpha1.DataClassPublic, false),
		tool("docs", "public", true, mcpv1alpha1.DataClassPublic),
		tool("docs", "internal", true, mcpv1alpha1.DataClassInternal),
		tool("docs", "confidential", true, mcpv1alpha1.DataClassConfidential),
		tool("docs", "off", false, mcpv1alpha1.DataClassPublic),
		tool("docs", "unlisted", true, mcpv1alpha1.DataClassPublic),
		tool("docs", "dropped", true, mcpv1alpha1.DataClassPublic),
		withDefinition(tool("docs", "drifted", true, mcpv1alpha1.DataClassPublic), hashB),
		tool("private", "secret", true, mcpv1alpha1.DataClassPublic),
		// Its shared name fits through "docs" (128 characters) and not
		// through "narrow" (130): there it is offered by no name.
		tool("docs", long, true, mcpv1alpha1.DataClassPublic),
		// Accepted twice: once whole, once narrowed to Public with one
		// tool dropped; and a server the owner does not share.
		// Whole, but adding a rule that does not compile to "dropped"
		// (not offered through it) and one that does to "public".
		accept("docs", "docs", func(s *mcpv1alpha1.McpSharedServerSpec) {
			s.ArgumentRules = []mcpv1alpha1.SharedToolRules{
				{Tool: "dropped", Rules: []mcpv1alpha1.ArgumentRule{{Name: "broken", Expression: "args.x <"}}},
				{Tool: "public", Rules: []mcpv1alpha1.ArgumentRule{{Name: "fine", Expression: "true"}}},
			}
		}),
		accept("narrow", "docs", func(s *mcpv1alpha1.McpSharedServerSpec) {
			s.MaxDataClass, s.DisabledTools = mcpv1alpha1.DataClassPublic, []string{"dropped"}
		}),
		accept("private", "private", nil),
		// One that cannot be honoured: it names a server of its own
		// namespace, whose tool RBAC would allow under the shared name.
		server(consumer, "mine", mcpv1alpha1.DataClassPublic, false),
		inNamespace(tool("mine", "x", true, mcpv1alpha1.DataClassPublic), consumer),
		&mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: "self"},
			Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: consumer, Name: "mine"}}},
		&mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: "agents"},
			Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
		},
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	// RBAC in the consumer's namespace names the shared names; nothing
	// grants "unlisted", and the owner's object names grant nothing here.
	allow := allowList{"docs.unlisted": true}
	for _, remote := range []string{"public", "internal", "confidential", "off", "dropped", "drifted", long} {
		allow[toolname.SharedLocalName("docs", remote)] = true
		allow[toolname.SharedLocalName("narrow", remote)] = true
	}
	allow[toolname.SharedLocalName("private", "secret")] = true
	allow[toolname.SharedLocalName("self", "x")] = true
	o.Authz = allow
	o.Authn = tokenTable{listToken: {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: consumer, ServiceAccount: "agent"}}
	var auditLog bytes.Buffer
	o.Audit = audit.NewJSONLines(&auditLog)
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &authn.Identity{Username: "system:serviceaccount:team:agent", Namespace: consumer, ServiceAccount: "agent"}
	ctx := context.Background()

	visible, err := g.visibleTools(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var listed, callable []string
	for _, v := range visible {
		listed = append(listed, v.localName())
	}
	for _, via := range []string{"docs", "narrow", "private", "self"} {
		for _, obj := range objects {
			tl, ok := obj.(*mcpv1alpha1.McpTool)
			if !ok {
				continue
			}
			c := &callScope{key: client.ObjectKeyFromObject(tl), via: via, obs: &callObs{}}
			if g.decide(ctx, id, c) == nil {
				callable = append(callable, toolname.SharedLocalName(via, tl.Spec.RemoteName))
			}
		}
	}
	sort.Strings(listed)
	sort.Strings(callable)
	want := []string{"mcps_docs_internal", "mcps_docs_" + long, "mcps_docs_public", "mcps_narrow_public"}
	if !slices.Equal(listed, want) || !slices.Equal(callable, want) {
		t.Fatalf("listed %v and callable %v, want both %v", listed, callable, want)
	}

	// Every shared name resolves to the owner's tool, and an agent of the
	// owner's namespace, or of a namespace not granted, sees none of them.
	o2, err := g.offerNamed(ctx, consumer, "mcps_docs_public")
	if err != nil || o2 == nil || o2.tool.Namespace != owner || o2.authzName() != "mcps_docs_public" {
		t.Fatalf("offerNamed = %+v, %v", o2, err)
	}
	for _, ns := range []string{owner, "elsewhere"} {
		other := &authn.Identity{Username: "system:serviceaccount:" + ns + ":agent", Namespace: ns, ServiceAccount: "agent"}
		c := &callScope{key: types.NamespacedName{Namespace: owner, Name: "docs.public"}, via: "docs", obs: &callObs{}}
		if g.decide(ctx, other, c) == nil {
			t.Errorf("an agent of %s called a tool shared with %s through its McpSharedServer", ns, consumer)
		}
	}

	// The gateway's own list serves the shared tools under the consumer's
	// names, byte for byte as the SDK's path does.
	hs := httptest.NewServer(g.Handler())
	defer hs.Close()
	before := g.fastLists.Load()
	fast := postList(t, hs.URL, plainListBody("1"))
	if g.fastLists.Load() != before+1 {
		t.Fatal("a list of shared tools was not answered by the gateway's own list")
	}
	g.noFastList.Store(true)
	slow := postList(t, hs.URL, plainListBody("1"))
	if fast != slow {
		t.Errorf("the gateway's list of shared tools differs from the SDK's:\n own: %+v\n sdk: %+v", fast, slow)
	}
	for _, name := range want {
		if !strings.Contains(fast.body, `"name":"`+name+`"`) {
			t.Errorf("the list lacks %s: %s", name, fast.body)
		}
	}
}

func inNamespace(t *mcpv1alpha1.McpTool, ns string) *mcpv1alpha1.McpTool {
	t.Namespace = ns
	return t
}

// newSharedApprovalGateway is a gateway whose agent team/agent calls
// platform/docs.echo, which the owner shares with team and whose calls
// need a person's approval, through team's McpSharedServer "docs"; more
// are objects of either namespace (access policies), and edit, when not
// nil, changes the owner's server and the consumer's McpSharedServer.
func newSharedApprovalGateway(t *testing.T, sharing *mcpv1alpha1.ServerSharing, edit func(*mcpv1alpha1.McpServer, *mcpv1alpha1.McpSharedServer), more ...client.Object) *personGateway {
	t.Helper()
	const owner, consumer = "platform", "team"
	tl := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "docs.echo", Generation: 1},
		Spec:       mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: "echo", ApprovedDefinitionHash: hashA},
	}
	tl.Status.LocalName, tl.Status.DefinitionHash = "mcp_docs_echo", hashA
	tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: metav1.Now()}}
	srv := server(owner, "docs", mcpv1alpha1.DataClassPublic, true)
	srv.Spec.Sharing = sharing
	ss := &mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: "docs"},
		Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: owner, Name: "docs"}}}
	if edit != nil {
		edit(srv, ss)
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(more, srv, tl, ss)...).Build()
	o.Authz = allowList{toolname.SharedLocalName("docs", "echo"): true}
	store := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&mcpv1alpha1.McpCallApproval{}).Build()
	o.Approvals = store
	o.ApprovalKeys = approvals.StaticKeys{Current: []byte(strings.Repeat("k", 32))}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &personGateway{g: g, store: store, key: client.ObjectKeyFromObject(tl), via: "docs",
		id: &authn.Identity{Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: consumer, ServiceAccount: "agent"}}
}

// answered is a call of the shared echo carrying its own client's
// approval of it: an approval state the gateway signed for exactly this
// call, and the form answered "approve".
func (p *personGateway) answered(t *testing.T, args string) *mcp.CallToolRequest {
	t.Helper()
	_, hash, err := arguments(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	state := approvals.State{Caller: p.id.UID + "/" + p.id.Username, Tool: p.id.Namespace + "/" + toolname.SharedLocalName(p.via, "echo"),
		Definition: hashA, Arguments: hash, Expires: time.Now().Add(approvals.StateWindow).Unix(), Nonce: approvals.NewNonce()}
	token, err := p.g.approver.Sign(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: toolname.SharedLocalName(p.via, "echo"), Arguments: json.RawMessage(args),
		RequestState:   token,
		InputResponses: mcp.InputResponseMap{approvalInput: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}}}
}

// The attack of issue #32: the consumer's admin opts its agent into
// ClientElicitation, and the agent answers its own approval question for
// the owner's tool that requires a person. The owner accepts only Person
// (the default): the call waits for an McpCallApproval in the owner's
// namespace, under the owner's names, which the owner's approvers decide,
// and is made once one of them approved it.
func TestAConsumerCannotLiftTheOwnersApprovalWithItsOwnClient(t *testing.T) {
	optIn := policy("team", mcpv1alpha1.DataClassPublic, "agent")
	optIn.Spec.ApprovalMode = mcpv1alpha1.ApprovalClientElicitation
	p := newSharedApprovalGateway(t, &mcpv1alpha1.ServerSharing{Namespaces: []string{"team"}}, nil, &optIn)
	answer := p.callWith(t, p.answered(t, `{"q":"x"}`))
	if answer == nil {
		t.Fatal("the consumer's agent approved the owner's tool by its own client: the call would be sent upstream")
	}
	if got := textOfResult(answer); !strings.Contains(got, "waits for a person's approval") {
		t.Fatalf("the call answered %q, want it to wait for a person", got)
	}
	list := p.list(t)
	if len(list) != 1 || list[0].Namespace != "platform" {
		t.Fatalf("the API holds %+v, want one approval in the owner's namespace", list)
	}
	a := list[0]
	if got := []string{a.Spec.Tool, a.Spec.Server, a.Spec.LocalName, a.Spec.Caller}; !slices.Equal(got, []string{"docs.echo", "docs", "mcps_docs_echo", p.id.Username}) {
		t.Errorf("the approval names %v, want the owner's tool and server, the name called and the caller", got)
	}
	a.Spec.Decision, a.Spec.DecidedBy = mcpv1alpha1.CallApproved, "olivia"
	if err := p.store.Update(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if answer := p.callWith(t, p.answered(t, `{"q":"x"}`)); answer != nil {
		t.Fatalf("the call the owner's approver approved answered %q", textOfResult(answer))
	}
}

// The owner's terms narrow the consumer's approval mode and say whose
// people decide; an approval only the consumer requires is the
// consumer's, approved its way.
func TestSharedApprovalIsOnTheOwnersTerms(t *testing.T) {
	optIn := policy("team", mcpv1alpha1.DataClassPublic, "agent")
	optIn.Spec.ApprovalMode = mcpv1alpha1.ApprovalClientElicitation
	person := policy("team", mcpv1alpha1.DataClassPublic, "agent")
	both := []mcpv1alpha1.ApprovalMode{mcpv1alpha1.ApprovalPerson, mcpv1alpha1.ApprovalClientElicitation}
	for _, tc := range []struct {
		name    string
		sharing mcpv1alpha1.ServerSharing
		policy  mcpv1alpha1.McpAccessPolicy
		// ownerFree: the owner requires no approval, the consumer's
		// McpSharedServer does.
		ownerFree bool
		// sent: the client's own answer lets the call go; otherwise it
		// waits for an approval in namespace at.
		sent bool
		at   string
	}{
		{name: "the owner's default: Person, decided in the owner's namespace", policy: optIn, at: "platform"},
		{name: "Person listed alone", sharing: mcpv1alpha1.ServerSharing{ApprovalModes: []mcpv1alpha1.ApprovalMode{mcpv1alpha1.ApprovalPerson}}, policy: optIn, at: "platform"},
		{name: "the owner accepts ClientElicitation", sharing: mcpv1alpha1.ServerSharing{ApprovalModes: both}, policy: optIn, sent: true},
		{name: "accepted, but the consumer chose Person", sharing: mcpv1alpha1.ServerSharing{ApprovalModes: both}, policy: person, at: "platform"},
		{name: "the owner lets the consumer's people decide", sharing: mcpv1alpha1.ServerSharing{Approvers: mcpv1alpha1.SharedApproversConsumer}, policy: optIn, at: "team"},
		{name: "named Owner", sharing: mcpv1alpha1.ServerSharing{Approvers: mcpv1alpha1.SharedApproversOwner}, policy: person, at: "platform"},
		{name: "only the consumer requires approval: its mode", policy: optIn, ownerFree: true, sent: true},
		{name: "only the consumer requires approval: its people", policy: person, ownerFree: true, at: "team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sharing := tc.sharing
			sharing.Namespaces = []string{"team"}
			pol := tc.policy
			var edit func(*mcpv1alpha1.McpServer, *mcpv1alpha1.McpSharedServer)
			if tc.ownerFree {
				edit = func(srv *mcpv1alpha1.McpServer, ss *mcpv1alpha1.McpSharedServer) {
					srv.Spec.ApprovalRequired, ss.Spec.ApprovalRequired = ptr.To(false), true
				}
			}
			p := newSharedApprovalGateway(t, &sharing, edit, &pol)
			answer := p.callWith(t, p.answered(t, `{"q":"x"}`))
			if tc.sent {
				if answer != nil {
					t.Fatalf("the client's approval was refused: %q", textOfResult(answer))
				}
				return
			}
			if got := textOfResult(answer); !strings.Contains(got, "waits for a person's approval") {
				t.Fatalf("the call answered %q, want it to wait for a person", got)
			}
			var pending []string
			for _, a := range p.list(t) {
				pending = append(pending, a.Namespace)
			}
			if !slices.Equal(pending, []string{tc.at}) {
				t.Fatalf("approvals in %v, want one in %s", pending, tc.at)
			}
		})
	}
}
