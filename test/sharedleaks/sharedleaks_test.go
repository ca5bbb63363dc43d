// Package sharedleaks attacks, from a consuming namespace, what the
// gateway tells and writes about another namespace's shared server (issue
// #32, item 8). The gateway is built through its exported API only, with
// the API objects in a fake reader, so that these attacks live beside the
// gateway without reaching into it.
package sharedleaks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/upstream"
)

const (
	owner, consumer = "platform", "team"
	token           = "agent-token"
	sharedName      = "mcps_docs_echo"
	hash            = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

// agent is the consuming namespace's ServiceAccount.
type agent struct{}

func (agent) Authenticate(_ context.Context, tok string) (*authn.Identity, error) {
	if tok != token {
		return nil, authn.ErrUnauthenticated
	}
	return &authn.Identity{Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: consumer, ServiceAccount: "agent"}, nil
}

// rbac lets the agent call the shared tool in its own namespace, as the
// consumer's admins grant it.
type rbac struct{}

func (rbac) CanCall(_ context.Context, id *authn.Identity, namespace, tool string) (bool, error) {
	return namespace == consumer && tool == sharedName, nil
}

// recorder keeps the namespaces and names of the objects Events are about.
type recorder struct {
	mu    sync.Mutex
	about []string
}

func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := regarding.(client.Object); ok {
		r.about = append(r.about, fmt.Sprintf("%s %s/%s %s: %s", eventtype, o.GetNamespace(), o.GetName(), reason, fmt.Sprintf(note, args...)))
	}
}

func (r *recorder) in(ns string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.about {
		if strings.Contains(a, " "+ns+"/") {
			out = append(out, a)
		}
	}
	return out
}

// objects are the owner's server docs (sharing as given, auth as given),
// its enabled and approved echo, and the consumer's acceptance.
func objects(sharing *mcpv1alpha1.ServerSharing, auth *mcpv1alpha1.McpServerAuth) []client.Object {
	off := false
	srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "docs"},
		Spec: mcpv1alpha1.McpServerSpec{URL: "https://127.0.0.1:1/mcp", DataClass: mcpv1alpha1.DataClassPublic, ApprovalRequired: &off, Sharing: sharing}}
	srv.Spec.Auth = auth
	tool := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "docs.echo", Generation: 1},
		Spec: mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: "echo", ApprovedDefinitionHash: hash}}
	tool.Status.LocalName, tool.Status.DefinitionHash = "mcp_docs_echo", hash
	tool.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: metav1.Now()}}
	return []client.Object{
		srv, tool,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consumer, Labels: map[string]string{corev1.LabelMetadataName: consumer}}},
		&mcpv1alpha1.McpSharedServer{ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: "docs"},
			Spec: mcpv1alpha1.McpSharedServerSpec{Server: mcpv1alpha1.SharedServerReference{Namespace: owner, Name: "docs"}}},
		&mcpv1alpha1.McpAccessPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: "agents"},
			Spec: mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassRestricted}},
	}
}

// call starts a gateway over objs and calls the shared echo once as the
// consumer's agent; it returns the answer's body.
func call(t *testing.T, rec *recorder, objs ...client.Object) string {
	t.Helper()
	return callWith(t, rec, nil, objs...)
}

// callWith is call with the gateway's options changed by edit first.
func callWith(t *testing.T, rec *recorder, edit func(*gateway.Options), objs ...client.Object) string {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	o := gateway.Options{
		Reader: c, Authn: agent{}, Authz: rbac{},
		Upstreams: &upstream.Endpoints{Credentials: &credentials.Resolver{Secrets: c, Profiles: c}},
		MCP:       mcp.New(mcp.Options{}), Audit: audit.NewJSONLines(io.Discard), Recorder: rec,
	}
	if edit != nil {
		edit(&o)
	}
	g, err := gateway.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + sharedName + `","arguments":{"text":"hi"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, srv.URL+gateway.Path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", sharedName)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A namespace the gateway cannot read (not in its cache yet, or gone) has
// no labels to match: a NotIn selector, which an empty label set
// satisfies, must not grant it. This holds today: the rule is
// governance.SharedWith, which the gateway calls.
func TestANamespaceMissingFromTheCacheMatchesNoNegativeSelector(t *testing.T) {
	notIn := &mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"untrusted"}}}}}
	notShared := call(t, &recorder{}, objects(nil, nil)...)
	var missing []client.Object
	for _, o := range objects(notIn, nil) {
		if _, ok := o.(*corev1.Namespace); !ok {
			missing = append(missing, o)
		}
	}
	if got := call(t, &recorder{}, missing...); got != notShared {
		t.Errorf("a namespace missing from the cache matched tier NotIn [untrusted]:\n%s\nnot, as for a server not shared,\n%s", got, notShared)
	}
	// Known, and labelled outside the NotIn values, it is granted.
	if got := call(t, &recorder{}, objects(notIn, nil)...); got == notShared {
		t.Error("a known namespace the selector matches was not granted")
	}
}

// The attack of docs/adr/046: the tenant labels its own namespace to match
// the owner's selector. Under the administrator's reserved prefix the
// gateway, given the administrator's trust as the manager gives it, does
// not grant it, as the controllers report; a reserved key an
// administrator set still grants.
func TestATenantsOwnLabelGrantsNothingAtTheGatewayUnderAReservedPrefix(t *testing.T) {
	trust := func(o *gateway.Options) {
		o.SharingTrust = governance.SelectorTrust{KeyPrefix: "sharing.mcp.catalog.dev/"}
	}
	selecting := func(key string) []client.Object {
		objs := objects(&mcpv1alpha1.ServerSharing{NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{
			{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"docs"}}}}}, nil)
		for _, o := range objs {
			if ns, ok := o.(*corev1.Namespace); ok {
				ns.Labels[key] = "docs"
			}
		}
		return objs
	}
	notShared := call(t, &recorder{}, objects(nil, nil)...)
	if got := call(t, &recorder{}, selecting("team")...); got == notShared {
		t.Fatal("without the trust the tenant's own label should match (the risk the trust removes)")
	}
	if got := callWith(t, &recorder{}, trust, selecting("team")...); got != notShared {
		t.Errorf("the gateway granted a namespace by a label its tenant set, outside the reserved prefix:\n%s", got)
	}
	if got := callWith(t, &recorder{}, trust, selecting("sharing.mcp.catalog.dev/team")...); got == notShared {
		t.Error("the gateway did not grant by a reserved label")
	}
}

// The attack: a namespace the owner never granted accepts the owner's
// server with an McpSharedServer, lets its agent call the shared name,
// and so writes Warning Events onto the owner's McpTool, in the owner's
// namespace, as often as it calls.
func TestANamespaceWithoutAGrantWritesNoEventOnTheOwnersTool(t *testing.T) {
	rec := &recorder{}
	answer := call(t, rec, objects(nil, nil)...)
	if !strings.Contains(answer, "isError") {
		t.Fatalf("the call of a server not shared with the namespace was not refused: %s", answer)
	}
	if got := rec.in(owner); len(got) > 0 {
		t.Errorf("a namespace without a grant wrote Events in the owner's namespace: %q", got)
	}
}

// The attack: a granted consumer's call fails before it is sent, because
// of the owner's credential; the agent's answer names why (the owner's
// Secret is missing, lacks its key, or did not opt in), which is the
// owner's business. It must read the same whatever the owner's
// credential's state.
func TestASharedCallsFailureTellsTheConsumerNothingOfTheOwnersCredential(t *testing.T) {
	granted := &mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}}
	bearer := &mcpv1alpha1.McpServerAuth{Bearer: &mcpv1alpha1.BearerAuth{SecretRef: mcpv1alpha1.SecretKeySelector{Name: "docs-token", Key: "token"}}}
	secret := func(labels map[string]string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: "docs-token", Labels: labels}, Data: data}
	}
	optIn := map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}
	answers := map[string]string{
		"missing":         call(t, &recorder{}, objects(granted, bearer)...),
		"without its key": call(t, &recorder{}, append(objects(granted, bearer), secret(optIn, map[string][]byte{"other": []byte("x")}))...),
		"not opted in":    call(t, &recorder{}, append(objects(granted, bearer), secret(nil, map[string][]byte{"token": []byte("x")}))...),
	}
	first := answers["missing"]
	if !strings.Contains(first, "isError") {
		t.Fatalf("the call did not fail: %s", first)
	}
	for state, a := range answers {
		if a != first {
			t.Errorf("the owner's Secret %s reads differently to the consumer:\n%s\nnot\n%s", state, a, first)
		}
	}
}

// The attack: the consumer's people approve a call of the shared echo of
// the owner platform; the consumer's admin then points its McpSharedServer
// of the same name at another owner's server with a tool of the same
// name and definition, and the agent retries. The approval a person gave
// for platform's server must not open a call of another's.
func TestACallApprovalIsBoundToTheOwnersServer(t *testing.T) {

	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	store := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&mcpv1alpha1.McpCallApproval{}).Build()
	shared := func(o *gateway.Options) {
		o.Approvals = store
		o.ApprovalKeys = approvals.StaticKeys{Current: []byte(strings.Repeat("k", 32))}
	}
	// Both owners share with the consumer, require approval, and let the
	// consumer's people decide.
	grant := &mcpv1alpha1.ServerSharing{Namespaces: []string{consumer}, Approvers: mcpv1alpha1.SharedApproversConsumer}
	at := func(ownerNS string) []client.Object {
		objs := objects(grant, nil)
		on := true
		for _, o := range objs {
			switch v := o.(type) {
			case *mcpv1alpha1.McpServer:
				v.Namespace, v.Spec.ApprovalRequired = ownerNS, &on
			case *mcpv1alpha1.McpTool:
				v.Namespace = ownerNS
			case *mcpv1alpha1.McpSharedServer:
				v.Spec.Server.Namespace = ownerNS
			}
		}
		return objs
	}
	if answer := callWith(t, &recorder{}, shared, at(owner)...); !strings.Contains(answer, "waits for a person") {
		t.Fatalf("the first call does not wait for approval: %s", answer)
	}
	var list mcpv1alpha1.McpCallApprovalList
	if err := store.List(context.Background(), &list, client.InNamespace(consumer)); err != nil || len(list.Items) != 1 {
		t.Fatalf("approvals in the consumer's namespace: %d, %v", len(list.Items), err)
	}
	a := list.Items[0]
	a.Spec.Decision, a.Spec.DecidedBy = mcpv1alpha1.CallApproved, "alice"
	if err := store.Update(context.Background(), &a); err != nil {
		t.Fatal(err)
	}

	// The same McpSharedServer name, now pointing at another owner.
	callWith(t, &recorder{}, shared, at("elsewhere")...)
	got := &mcpv1alpha1.McpCallApproval{}
	if err := store.Get(context.Background(), client.ObjectKeyFromObject(&a), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ConsumedAt != nil {
		t.Errorf("the approval given for %s/docs opened a call of elsewhere/docs (used at %s)", owner, got.Status.ConsumedAt)
	}
}
