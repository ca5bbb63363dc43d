package gateway

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/governance"
)

// allowList authorises calls of the McpTools it names, in any namespace.
type allowList map[string]bool

func (a allowList) CanCall(_ context.Context, _ *authn.Identity, _, tool string) (bool, error) {
	return a[tool], nil
}

// The tool list and the call path ask one decision, so the list offers
// exactly the tools a call is allowed, whatever step refuses the others.
func TestListOffersExactlyWhatACallIsAllowed(t *testing.T) {
	const ns = "team"
	tool := func(name string, enabled, ready bool, class mcpv1alpha1.DataClass, local string) *mcpv1alpha1.McpTool {
		t := &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
			Spec:       mcpv1alpha1.McpToolSpec{Enabled: enabled, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, ApprovedDefinitionHash: hashA},
		}
		// The class is the tool's spec raising the server's Public; status
		// says the same, as a reconciled tool's would.
		t.Spec.DataClass = class
		t.Status.LocalName, t.Status.EffectiveDataClass, t.Status.DefinitionHash = local, class, hashA
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: status, ObservedGeneration: 1, Reason: "X", LastTransitionTime: metav1.Now()}}
		return t
	}
	objects := []client.Object{
		server(ns, "docs", mcpv1alpha1.DataClassPublic, false),
		tool("docs.public", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_public"),
		tool("docs.internal", true, true, mcpv1alpha1.DataClassInternal, "mcp_docs_internal"),
		tool("docs.confidential", true, true, mcpv1alpha1.DataClassConfidential, "mcp_docs_confidential"),
		tool("docs.disabled", false, true, mcpv1alpha1.DataClassPublic, "mcp_docs_disabled"),
		tool("docs.not-ready", true, false, mcpv1alpha1.DataClassPublic, "mcp_docs_not_ready"),
		tool("docs.forbidden", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_forbidden"),
		tool("docs.unnamed", true, true, mcpv1alpha1.DataClassPublic, ""),
		// Ready still True, as the tool controller left it, but an import
		// wrote a definition nobody approved, or nobody approved any.
		withDefinition(tool("docs.drifted", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_drifted"), hashB),
		withApproval(tool("docs.unapproved", true, true, mcpv1alpha1.DataClassPublic, "mcp_docs_unapproved"), ""),
		&mcpv1alpha1.McpAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"},
			Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
		},
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	o.Authz = allowList{"docs.public": true, "docs.internal": true, "docs.confidential": true, "docs.disabled": true, "docs.not-ready": true, "docs.unnamed": true, "docs.drifted": true, "docs.unapproved": true}
	var auditLog bytes.Buffer
	o.Audit = audit.NewJSONLines(&auditLog)
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &authn.Identity{Username: "system:serviceaccount:team:agent", Namespace: ns, ServiceAccount: "agent"}
	ctx := context.Background()

	visible, err := g.visibleTools(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var listed, callable []string
	for _, v := range visible {
		listed = append(listed, v.tool.Name)
	}
	for _, obj := range objects {
		tl, ok := obj.(*mcpv1alpha1.McpTool)
		if !ok {
			continue
		}
		c := &callScope{key: client.ObjectKeyFromObject(tl), obs: &callObs{}}
		if g.decide(ctx, id, c) == nil {
			callable = append(callable, tl.Name)
		}
	}
	sort.Strings(listed)
	sort.Strings(callable)
	want := []string{"docs.internal", "docs.public"}
	if !slices.Equal(listed, want) || !slices.Equal(callable, want) {
		t.Fatalf("listed %v and callable %v, want both %v", listed, callable, want)
	}
}

// A caller RBAC does not let call a tool is told the same thing whatever the
// tool's state, and the same as for a tool that does not exist; only a
// caller RBAC allows learns that the tool is disabled.
func TestRefusalsBeforeRBACSayNothingAboutTheTool(t *testing.T) {
	const ns = "team"
	tool := func(name string, enabled bool) *mcpv1alpha1.McpTool {
		t := &mcpv1alpha1.McpTool{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
			Spec:       mcpv1alpha1.McpToolSpec{Enabled: enabled, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}},
		}
		t.Status.LocalName, t.Status.EffectiveDataClass = "mcp_"+name, mcpv1alpha1.DataClassPublic
		t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		return t
	}
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	o := completeOptions()
	o.Reader = fake.NewClientBuilder().WithScheme(scheme).Build()
	o.Authz = allowList{"allowed-disabled": true}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &authn.Identity{Username: "system:serviceaccount:team:agent", Namespace: ns, ServiceAccount: "agent"}
	ctx := context.Background()
	textOf := func(_ []mcpv1alpha1.McpAccessPolicy, _ verdict, r *sdk.CallToolResult) string {
		if r == nil || len(r.Content) != 1 {
			t.Fatalf("result %+v, want one refusal text", r)
		}
		return r.Content[0].(*sdk.TextContent).Text
	}
	forbiddenReady := textOf(g.gateCall(ctx, &audit.Record{}, id, toolOffer{tool: tool("forbidden-ready", true)}))
	forbiddenDisabled := textOf(g.gateCall(ctx, &audit.Record{}, id, toolOffer{tool: tool("forbidden-disabled", false)}))
	if forbiddenReady != forbiddenDisabled || !strings.HasSuffix(forbiddenReady, unknownTool) {
		t.Errorf("forbidden tools answered %q and %q, want both the uniform %q", forbiddenReady, forbiddenDisabled, unknownTool)
	}
	other := tool("allowed-disabled", true)
	other.Namespace = "elsewhere"
	if got := textOf(g.gateCall(ctx, &audit.Record{}, id, toolOffer{tool: other})); got != forbiddenReady {
		t.Errorf("another namespace's tool answered %q, want %q", got, forbiddenReady)
	}
	allowedDisabled := textOf(g.gateCall(ctx, &audit.Record{}, id, toolOffer{tool: tool("allowed-disabled", false)}))
	if !strings.Contains(allowedDisabled, "disabled") {
		t.Errorf("a caller RBAC allows was told %q, want that the tool is disabled", allowedDisabled)
	}
}

func policy(ns string, class mcpv1alpha1.DataClass, sas ...string) mcpv1alpha1.McpAccessPolicy {
	return mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: sas, MaxDataClass: class},
	}
}

func TestCeilingForIsTheHighestMatchingPolicyAndPublicWithoutOne(t *testing.T) {
	bot := &authn.Identity{Namespace: "team", ServiceAccount: "bot", Username: "system:serviceaccount:team:bot"}
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
			if got := ceilingFor(bot, tc.policies).For(governance.Unreviewed); got != tc.want {
				t.Fatalf("ceilingFor = %s, want %s", got, tc.want)
			}
		})
	}
}

// server is an McpServer of the given class that requires approval or
// not.
func server(ns, name string, class mcpv1alpha1.DataClass, approval bool) *mcpv1alpha1.McpServer {
	return &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       mcpv1alpha1.McpServerSpec{URL: "https://docs.example", DataClass: class, ApprovalRequired: &approval},
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
		{"disabled", audit.DenyNotServable, readyTool(false, 2, 2, metav1.ConditionTrue), mcpv1alpha1.ReasonDisabled, "it is disabled"},
		{"the Ready reason", audit.DenyNotServable, drifted, mcpv1alpha1.ReasonDefinitionChanged, "its definition changed"},
		{"drifted while Ready still says True", audit.DenyNotServable, withDefinition(readyTool(true, 2, 2, metav1.ConditionTrue), hashB), mcpv1alpha1.ReasonDefinitionChanged, "its definition changed"},
		{"no approval on record while Ready still says True", audit.DenyNotServable, withApproval(readyTool(true, 2, 2, metav1.ConditionTrue), ""), mcpv1alpha1.ReasonDefinitionNotApproved, "no definition of it is approved"},
		{"not yet reconciled", audit.DenyNotServable, readyTool(true, 3, 2, metav1.ConditionTrue), mcpv1alpha1.ReasonProgressing, "(Progressing)"},
		{"never reconciled", audit.DenyNotServable, readyTool(true, 1, 0, ""), mcpv1alpha1.ReasonNotImported, "(NotImported)"},
		{"other reasons have none", audit.DenyForbidden, drifted, "", "RBAC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := detailOf(tc.reason, tc.tool); got != tc.want {
				t.Errorf("detailOf = %q, want %q", got, tc.want)
			}
			if got := refused(tc.reason, tc.tool).message(); !strings.Contains(got, tc.says) {
				t.Errorf("message = %q, want it to say %q", got, tc.says)
			}
		})
	}
}

// The platform's tightening reaches every call even when nothing
// reconciles the tool: an attacker holding mcptools/status (or a tool
// labelled into a shard that does not run) leaves status saying Internal
// and no approval, and the gate decides by the McpServer's and McpTool's
// spec as they are now, in the list and on the call alike.
func TestTheGateDecidesFromSpecWhateverStatusSays(t *testing.T) {
	const ns = "team"
	no := false
	tl := &mcpv1alpha1.McpTool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs.echo", Generation: 1},
		Spec:       mcpv1alpha1.McpToolSpec{Enabled: true, ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, ApprovedDefinitionHash: hashA},
	}
	// What the attacker wrote, and keeps writing: the old, looser rules.
	tl.Status.LocalName, tl.Status.DefinitionHash = "mcp_docs_echo", hashA
	tl.Status.EffectiveDataClass, tl.Status.EffectiveApprovalRequired = mcpv1alpha1.DataClassInternal, &no
	tl.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: metav1.Now()}}
	srv := server(ns, "docs", mcpv1alpha1.DataClassInternal, false)
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(srv, tl, &mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"agent"}, MaxDataClass: mcpv1alpha1.DataClassConfidential},
	}).Build()
	o := completeOptions()
	o.Reader = reader
	o.Authz = allowList{"docs.echo": true}
	var auditLog bytes.Buffer
	o.Audit = audit.NewJSONLines(&auditLog)
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	id := &authn.Identity{Username: "system:serviceaccount:team:agent", Namespace: ns, ServiceAccount: "agent"}
	ctx := context.Background()
	req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "mcp_docs_echo"}}
	// call decides one call up to the approval stage and returns the
	// refusal (nil when the call may go on) and the scope.
	call := func() (*sdk.CallToolResult, *callScope) {
		t.Helper()
		c := &callScope{key: client.ObjectKeyFromObject(tl), obs: &callObs{}}
		if answer := g.decide(ctx, id, c); answer != nil {
			return answer, c
		}
		answer, err := g.approve(ctx, req, id, c)
		if err != nil {
			t.Fatal(err)
		}
		return answer, c
	}
	listed := func() bool {
		t.Helper()
		visible, err := g.visibleTools(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return len(visible) == 1
	}
	change := func(f func(*mcpv1alpha1.McpServer)) {
		t.Helper()
		s := &mcpv1alpha1.McpServer{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(srv), s); err != nil {
			t.Fatal(err)
		}
		f(s)
		if err := reader.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	refusedFor := func(answer *sdk.CallToolResult, says string) {
		t.Helper()
		if answer == nil || !answer.IsError || !strings.Contains(answer.Content[0].(*sdk.TextContent).Text, says) {
			t.Fatalf("answer %+v, want a refusal saying %q", answer, says)
		}
	}

	if answer, c := call(); answer != nil || c.approval || c.class != mcpv1alpha1.DataClassInternal || !listed() {
		t.Fatalf("before any change: answer %+v, approval %t, class %s; want the call allowed without approval at Internal", answer, c.approval, c.class)
	}

	// The server now requires approval; the tool's status still says not.
	yes := true
	change(func(s *mcpv1alpha1.McpServer) { s.Spec.ApprovalRequired = &yes })
	answer, c := call()
	if !c.approval {
		t.Fatal("the server requires approval, and the call was decided without it")
	}
	refusedFor(answer, "approval")
	if !strings.Contains(auditLog.String(), `"approval":"Required"`) {
		t.Errorf("the audit record does not say the call needed approval: %s", auditLog.String())
	}

	// The server is now Restricted, above the caller's ceiling.
	change(func(s *mcpv1alpha1.McpServer) {
		s.Spec.ApprovalRequired, s.Spec.DataClass = &no, mcpv1alpha1.DataClassRestricted
	})
	answer, _ = call()
	refusedFor(answer, "above the caller's ceiling")
	if listed() {
		t.Error("a tool above the caller's ceiling is listed")
	}

	// The tool is labelled into a shard its server is not in.
	change(func(s *mcpv1alpha1.McpServer) { s.Spec.DataClass = mcpv1alpha1.DataClassInternal })
	moved := &mcpv1alpha1.McpTool{}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(tl), moved); err != nil {
		t.Fatal(err)
	}
	moved.Labels = map[string]string{mcpv1alpha1.LabelShardKey: "nobody-runs-this"}
	if err := reader.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	answer, _ = call()
	refusedFor(answer, "another shard")
	if listed() {
		t.Error("a tool outside its server's shard is listed")
	}
	// Its server labelled into the same shard: the tool follows it.
	change(func(s *mcpv1alpha1.McpServer) {
		s.Labels = map[string]string{mcpv1alpha1.LabelShardKey: "nobody-runs-this"}
	})
	if answer, _ := call(); answer != nil || !listed() {
		t.Fatalf("a tool in its server's shard was refused: %+v", answer)
	}

	// The server is gone; the tool's status still says Ready.
	if err := reader.Delete(ctx, srv); err != nil {
		t.Fatal(err)
	}
	answer, _ = call()
	refusedFor(answer, "its McpServer does not exist")
	if listed() {
		t.Error("a tool without its server is listed")
	}
}

// deadlineReader answers reads of McpTools and blocks reads of McpServers
// until their context ends, as the cache does for a kind whose informer
// cannot sync; it records whether each read had a deadline.
type deadlineReader struct {
	client.Reader
	mu        sync.Mutex
	deadlines []bool
}

func (r *deadlineReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	_, has := ctx.Deadline()
	r.mu.Lock()
	r.deadlines = append(r.deadlines, has)
	r.mu.Unlock()
	if _, ok := obj.(*mcpv1alpha1.McpServer); ok {
		<-ctx.Done()
		return ctx.Err()
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A kind that never syncs fails every read at the deadline; a kind read
// once is read without one from then on.
func TestBoundedReaderDropsTheDeadlineOnceAKindIsRead(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := mcpv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tool := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "echo"}}
	fr := &deadlineReader{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tool).Build()}
	r := newBoundedReader(fr, 20*time.Millisecond, nil)
	ctx := context.Background()
	for range 2 {
		if err := r.Get(ctx, client.ObjectKey{Namespace: "team", Name: "docs"}, &mcpv1alpha1.McpServer{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("reading a kind that never syncs: %v, want the deadline", err)
		}
	}
	for range 2 {
		if err := r.Get(ctx, client.ObjectKeyFromObject(tool), &mcpv1alpha1.McpTool{}); err != nil {
			t.Fatal(err)
		}
	}
	// A missing object of a kind that answers is an answer too.
	if err := r.Get(ctx, client.ObjectKey{Namespace: "team", Name: "gone"}, &mcpv1alpha1.McpTool{}); !apierrors.IsNotFound(err) {
		t.Fatalf("reading a missing tool: %v", err)
	}
	want := []bool{true, true, true, false, false}
	if !slices.Equal(fr.deadlines, want) {
		t.Errorf("deadlines of the reads: %v, want %v", fr.deadlines, want)
	}
}
