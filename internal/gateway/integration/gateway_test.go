package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/test/mcpserver"
)

const (
	echo  = mcpserver.ToolEcho
	fail  = mcpserver.ToolFail
	image = mcpserver.ToolImageAndText
	slow  = mcpserver.ToolSlow
)

var _ = Describe("Listing", func() {
	It("offers each agent only the enabled tools its RBAC and ceiling allow, without contacting the upstream", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail, image})
		vault := newUpstream(ns, "vault", mcpserver.Options{}, []string{echo}, withDataClass(mcpv1alpha1.DataClassConfidential))
		before := docs.Requests() + vault.Requests()

		narrow := newAgent(ns, "narrow")
		narrow.grant(docs.object(echo), docs.object(fail), vault.object(echo))
		narrow.ceiling(mcpv1alpha1.DataClassInternal)
		wide := newAgent(ns, "wide")
		wide.grant()
		wide.ceiling(mcpv1alpha1.DataClassConfidential)
		// RBAC for everything, but no policy names it: the Public ceiling.
		public := newAgent(ns, "public")
		public.grant()
		// The highest ceiling, but no RBAC.
		unbound := newAgent(ns, "unbound")
		unbound.ceiling(mcpv1alpha1.DataClassRestricted)
		// Everything allowed, in its own namespace: tools of another
		// namespace are never offered.
		ns2 := newNamespace()
		stranger := newAgent(ns2, "stranger")
		stranger.grant()
		stranger.ceiling(mcpv1alpha1.DataClassRestricted)

		for _, era := range []string{legacyEra, modernEra} {
			By("listing in the " + era + " era")
			Expect(toolNames(narrow.connect(nil, era))).To(Equal([]string{docs.local(echo), docs.local(fail)}),
				"RBAC by name leaves out image_and_text; the ceiling leaves out vault's Confidential echo; disabled tools are never offered")
			Expect(toolNames(wide.connect(nil, era))).To(Equal([]string{docs.local(echo), docs.local(fail), docs.local(image), vault.local(echo)}))
			Expect(toolNames(public.connect(nil, era))).To(BeEmpty())
			Expect(toolNames(unbound.connect(nil, era))).To(BeEmpty())
			Expect(toolNames(stranger.connect(nil, era))).To(BeEmpty())
		}
		Expect(docs.Requests()+vault.Requests()).To(Equal(before), "the list comes from the catalog, not from the upstream")
	})

	It("presents the catalog's definition with write hints, not the upstream's claims", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		a := newAgent(ns, "bot").allowInternal()
		cs := a.connect(nil, modernEra)
		var tools []*sdk.Tool
		for t, err := range cs.Tools(context.Background(), nil) {
			Expect(err).NotTo(HaveOccurred())
			tools = append(tools, t)
		}
		Expect(tools).To(HaveLen(1))
		stored := docs.tool(echo)
		Expect(tools[0].Name).To(Equal(stored.Status.LocalName))
		Expect(tools[0].Description).To(Equal(stored.Status.Description))
		schema, err := json.Marshal(tools[0].InputSchema)
		Expect(err).NotTo(HaveOccurred())
		Expect(schema).To(MatchJSON(stored.Status.InputSchema.Raw))
		// The upstream marks echo read-only; the gateway treats every tool
		// as a destructive write.
		Expect(stored.Status.Hints.ReadOnlyHint).To(HaveValue(BeTrue()))
		Expect(tools[0].Annotations.ReadOnlyHint).To(BeFalse())
		Expect(tools[0].Annotations.DestructiveHint).To(HaveValue(BeTrue()))
	})
})

var _ = Describe("Calling", func() {
	DescribeTable("carries a call to the upstream with the server's credential and brings the answer back",
		func(era string) {
			ns := newNamespace()
			docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail, image})
			a := newAgent(ns, "bot").allowInternal()
			cs := a.connect(nil, era)

			arg := fmt.Sprintf("argument-%016x", rand.Uint64())
			isErr, txt := call(cs, docs.local(echo), map[string]any{"text": arg})
			Expect(isErr).To(BeFalse())
			Expect(txt).To(Equal(arg))
			Expect(docs.Calls(echo)).To(Equal(1))
			Expect(docs.Stats().LastCredential).To(Equal("Bearer "+docs.secret), "the McpServer's credential goes upstream, never the agent's token")

			isErr, txt = call(cs, docs.local(fail), nil)
			Expect(isErr).To(BeTrue(), "isError is preserved")
			Expect(txt).To(Equal(mcpserver.FailText))

			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: docs.local(image)})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.IsError).To(BeFalse())
			Expect(res.Content).To(HaveLen(2), "the image reaches the agent, beside its text (docs/adr/062-typed-results.md)")
			Expect(res.Content[0]).To(BeAssignableToTypeOf(&sdk.ImageContent{}))
			Expect(text(res)).To(Equal(mcpserver.ImageCaption))

			for tool, outcome := range map[string]string{echo: "Succeeded", fail: "ToolError", image: "Succeeded"} {
				recs := auditFor(ns, docs.object(tool))
				Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}), tool)
				Expect(recs[0].CallID).To(Equal(recs[1].CallID))
				Expect(recs[0].Caller).To(Equal("system:serviceaccount:" + ns + ":bot"))
				Expect(recs[0].Decision).To(Equal("Allowed"))
				Expect(recs[0].Approval).To(Equal("NotRequired"))
				Expect(recs[1].Outcome).To(Equal(outcome), tool)
			}
			Expect(strings.Join(auditLog.all(), "\n")).NotTo(ContainSubstring(arg), "audit records hold a hash of the arguments, never their values")
		},
		Entry("in the initialize era", legacyEra),
		Entry("in the 2026-07-28 era", modernEra),
	)

	It("mirrors an argument annotated x-mcp-header into its header for a 2026-07-28 upstream", func() {
		// A stateless go-sdk server speaks 2026-07-28 and rejects a call
		// whose annotated argument is not also in its Mcp-Param header.
		srv := sdk.NewServer(&sdk.Implementation{Name: "regions", Version: "1"}, nil)
		srv.AddTool(&sdk.Tool{
			Name:        "lookup",
			Description: "Looks a region up.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`),
		}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Region string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "region " + args.Region}}}, nil
		})
		var mu sync.Mutex
		var seen []string
		h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if v := r.Header.Get("Mcp-Param-Region"); v != "" {
				mu.Lock()
				seen = append(seen, v)
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		}))
		DeferCleanup(hs.Close)

		ns := newNamespace()
		regions := declare(ns, "regions", hs.URL+"/mcp", []string{"lookup"})
		a := newAgent(ns, "bot").allowInternal()
		cs := a.connect(nil, modernEra)
		// The gateway offers the annotated schema too, so the agent's client
		// must know it (from the list) to send the header the gateway's own
		// 2026-07-28 transport requires.
		Expect(toolNames(cs)).To(Equal([]string{regions.local("lookup")}))
		isErr, txt := call(cs, regions.local("lookup"), map[string]any{"region": "eu-west"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("region eu-west"))
		mu.Lock()
		defer mu.Unlock()
		Expect(seen).To(ContainElement("eu-west"))
	})
})

var _ = Describe("Refusals", func() {
	var (
		ns   string
		docs *upstream
		a    *agent
	)
	BeforeEach(func() {
		ns = newNamespace()
		docs = newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		a = newAgent(ns, "bot")
	})

	// refused calls a tool and checks that the gateway refused it with
	// reason (and detail), audited the refusal, and sent nothing upstream.
	refused := func(cs *sdk.ClientSession, remote, reason, detail, says string) {
		GinkgoHelper()
		before := docs.Requests()
		isErr, txt := call(cs, docs.local(remote), map[string]any{"text": "x"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(HavePrefix("Refused by the MCP catalog gateway: "))
		Expect(txt).To(ContainSubstring(says))
		Expect(docs.Requests()).To(Equal(before), "the upstream received nothing")
		recs := auditFor(ns, docs.object(remote))
		Expect(recs).NotTo(BeEmpty())
		last := recs[len(recs)-1]
		Expect([]string{last.Phase, last.Decision, last.Reason, last.Detail}).To(Equal([]string{audit.PhaseDenied, "Denied", reason, detail}))
		Expect(last.LocalName).To(Equal(docs.local(remote)))
	}

	It("answers 401 to a request without a valid token, and the upstream receives nothing", func() {
		before := docs.Requests()
		Expect(postInitialize("").StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(postInitialize("not-a-token").StatusCode).To(Equal(http.StatusUnauthorized))
		_, err := dial("", nil, modernEra)
		Expect(err).To(HaveOccurred())
		Expect(docs.Requests()).To(Equal(before))
	})

	It("accepts a ServiceAccount token for its audience and answers 401 to one bound to another audience", func() {
		a.allowInternal()
		// envtest's API server signs the TokenRequest token, and TokenReview
		// accepts it for the gateway's audience.
		Expect(postInitialize(a.token).StatusCode).To(Equal(http.StatusOK))

		before := docs.Requests()
		other := tokenFor(ns, a.name, "https://kubernetes.default.svc")
		Expect(postInitialize(other).StatusCode).To(Equal(http.StatusUnauthorized))
		_, err := dial(other, nil, legacyEra)
		Expect(err).To(HaveOccurred())
		Expect(docs.Requests()).To(Equal(before))
	})

	It("refuses a call the agent's RBAC does not allow", func() {
		docs.enable(fail)
		a.grant(docs.object(fail))
		a.ceiling(mcpv1alpha1.DataClassInternal)
		cs := a.connect(nil, modernEra)
		Expect(toolNames(cs)).To(Equal([]string{docs.local(fail)}))
		refused(cs, echo, audit.DenyForbidden, "", `RBAC verb "call"`)
	})

	It("refuses a tool above the agent's ceiling", func() {
		a.grant()
		a.ceiling(mcpv1alpha1.DataClassPublic)
		refused(a.connect(nil, legacyEra), echo, audit.DenyAboveCeiling, "", "McpAccessPolicy")
	})

	It("refuses a tool disabled after the session listed it, with an Event and a metric", func() {
		a.allowInternal()
		cs := a.connect(nil, legacyEra)
		Expect(toolNames(cs)).To(Equal([]string{docs.local(echo)}))
		docs.setEnabled(echo, false)
		docs.waitTool(echo, "False", mcpv1alpha1.ReasonDisabled)

		counter := metrics.GatewayCalls.WithLabelValues(ns, docs.name, docs.object(echo), audit.OutcomeDenied, audit.DenyNotServable)
		denials := counterValue(counter)
		refused(cs, echo, audit.DenyNotServable, mcpv1alpha1.ReasonDisabled, "it is disabled")
		Expect(counterValue(counter)).To(Equal(denials + 1))
		Eventually(func(g Gomega) []string {
			var evs eventsv1.EventList
			g.Expect(k8sClient.List(context.Background(), &evs, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				if e.Regarding.Kind == "McpTool" && e.Regarding.Name == docs.object(echo) {
					reasons = append(reasons, e.Reason+": "+e.Note)
				}
			}
			return reasons
		}, 10*time.Second, 100*time.Millisecond).Should(ContainElement(
			"CallRefused: a call by system:serviceaccount:" + ns + ":bot was refused: NotServable"))
	})

	It("refuses a tool whose definition changed upstream since it was enabled", func() {
		a.allowInternal()
		cs := a.connect(nil, modernEra)
		Expect(docs.SetToolDescription(echo, "Returns its text argument, and now also deletes everything.")).To(Succeed())
		docs.request(mcpv1alpha1.AnnotationRequestedImportAt)
		docs.waitTool(echo, "False", mcpv1alpha1.ReasonDefinitionChanged)
		refused(cs, echo, audit.DenyNotServable, mcpv1alpha1.ReasonDefinitionChanged, "its definition changed")
	})

	It("neither lists nor calls a tool whose definition is not the approved one, even while Ready still says True", func() {
		a.allowInternal()
		Expect(toolNames(a.connect(nil, modernEra))).To(Equal([]string{docs.local(echo)}))
		approved := docs.tool(echo).Spec.ApprovedDefinitionHash

		// A re-import writes the new definition and Ready=False in one
		// write, with the tool controller held: there is no moment at which
		// the new definition is on record with Ready True.
		release := toolControllerWrites.hold()
		DeferCleanup(release)
		Expect(docs.SetToolDescription(echo, "Returns its text argument, and now also deletes everything.")).To(Succeed())
		docs.request(mcpv1alpha1.AnnotationRequestedImportAt)
		key := client.ObjectKey{Namespace: ns, Name: docs.object(echo)}
		Eventually(func(g Gomega) string {
			t := &mcpv1alpha1.McpTool{}
			g.Expect(cached.Get(context.Background(), key, t)).To(Succeed())
			return t.Status.DefinitionHash
		}, 10*time.Second, 50*time.Millisecond).ShouldNot(Equal(approved), "the gateway's cache has the new definition")
		imported := docs.tool(echo)
		Expect(meta.IsStatusConditionTrue(imported.Status.Conditions, mcpv1alpha1.ConditionReady)).To(BeFalse(), "the import's own write turned Ready False")
		refused(a.connect(nil, modernEra), echo, audit.DenyNotServable, mcpv1alpha1.ReasonDefinitionChanged, "its definition changed")

		// The gateway does not rely on that: a definition that is not the
		// approved one is refused whatever Ready says. Another writer puts
		// Ready back to True for the new definition (the tool controller,
		// which would correct it, is held).
		held := toolControllerWrites.heldCount()
		patch := client.MergeFrom(imported.DeepCopy())
		meta.SetStatusCondition(&imported.Status.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: mcpv1alpha1.ReasonSucceeded, Message: "a stale or wrong Ready", ObservedGeneration: imported.Generation})
		Expect(k8sClient.Status().Patch(context.Background(), imported, patch)).To(Succeed())
		Eventually(func(g Gomega) bool {
			t := &mcpv1alpha1.McpTool{}
			g.Expect(cached.Get(context.Background(), key, t)).To(Succeed())
			return meta.IsStatusConditionTrue(t.Status.Conditions, mcpv1alpha1.ConditionReady)
		}, 10*time.Second, 50*time.Millisecond).Should(BeTrue(), "the gateway's cache says Ready True")
		Eventually(toolControllerWrites.heldCount, 10*time.Second, 50*time.Millisecond).Should(BeNumerically(">", held), "the tool controller tried to correct Ready and is held")

		// A new session of either era does not list it, and a call is refused
		// on the definition, without reaching the upstream.
		Expect(toolNames(a.connect(nil, modernEra))).To(BeEmpty())
		Expect(toolNames(a.connect(nil, legacyEra))).To(BeEmpty())
		refused(a.connect(nil, modernEra), echo, audit.DenyNotServable, mcpv1alpha1.ReasonDefinitionChanged, "its definition changed")
		Expect(meta.IsStatusConditionTrue(docs.tool(echo).Status.Conditions, mcpv1alpha1.ConditionReady)).To(BeTrue(), "all of this happened while Ready said True")

		release()
		docs.waitTool(echo, "False", mcpv1alpha1.ReasonDefinitionChanged)
	})

	It("fails a call to an upstream that went away, and refuses calls once a probe finds its server unreachable", func() {
		a.allowInternal()
		cs := a.connect(nil, modernEra)
		docs.Close()

		// The catalog still says Ready: the call is made, and fails.
		isErr, txt := call(cs, docs.local(echo), nil)
		Expect(isErr).To(BeTrue())
		Expect(txt).To(Equal("The call to " + docs.local(echo) + " failed (Unreachable); the remote server's answer is not shown."))
		recs := auditFor(ns, docs.object(echo))
		Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))
		Expect([]string{recs[1].Outcome, recs[1].ErrorKind}).To(Equal([]string{"Failed", "Unreachable"}))

		docs.request(mcpv1alpha1.AnnotationRequestedProbeAt)
		docs.waitTool(echo, "False", mcpv1alpha1.ReasonServerNotReady)
		refused(cs, echo, audit.DenyNotServable, mcpv1alpha1.ReasonServerNotReady, "its server is not Ready")
		Expect(phases(auditFor(ns, docs.object(echo)))).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter, audit.PhaseDenied}))
	})

	It("binds a session to the agent that opened it", func() {
		a.allowInternal()
		b := newAgent(ns, "other").allowInternal()
		resp := postInitialize(a.token)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		session := resp.Header.Get("Mcp-Session-Id")
		Expect(session).NotTo(BeEmpty())
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		Expect(post(b.token, session, list).StatusCode).To(Equal(http.StatusForbidden), "another agent's token cannot use the session")
		Expect(post(a.token, session, list).StatusCode).To(Equal(http.StatusOK))
	})
})

var _ = Describe("Approval by the agent's client (the ClientElicitation opt-in)", func() {
	DescribeTable("asks the client's human before each call of a tool that needs approval",
		func(era string) {
			ns := newNamespace()
			docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
			Expect(*docs.tool(echo).Status.EffectiveApprovalRequired).To(BeTrue())
			a := newAgent(ns, "bot")
			a.grant()
			a.ceiling(mcpv1alpha1.DataClassInternal, mcpv1alpha1.ApprovalClientElicitation)

			By("a human who approves: the call is made")
			yes := &approver{action: "accept", approve: true}
			isErr, txt := call(a.connect(&sdk.ClientOptions{ElicitationHandler: yes.handle}, era), docs.local(echo), map[string]any{"text": "approved"})
			Expect(isErr).To(BeFalse(), txt)
			Expect(txt).To(Equal("approved"))
			Expect(docs.Calls(echo)).To(Equal(1))
			Expect(yes.asked()).To(HaveLen(1))
			Expect(yes.asked()[0]).To(ContainSubstring("the tool " + docs.local(echo) + " of the MCP server docs (data class Internal)"))
			recs := auditFor(ns, docs.object(echo))
			Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))
			Expect(recs[0].Approval).To(Equal("Approved"))

			for _, no := range []*approver{{action: "decline"}, {action: "cancel"}, {action: "accept", approve: false}} {
				By("a human who answers " + no.action + fmt.Sprintf(" (approve %v): refused", no.approve))
				before := docs.Requests()
				isErr, txt := call(a.connect(&sdk.ClientOptions{ElicitationHandler: no.handle}, era), docs.local(echo), map[string]any{"text": "x"})
				Expect(isErr).To(BeTrue())
				Expect(txt).To(Equal("Refused by the MCP catalog gateway: the call was not approved; it was not made"))
				Expect(no.asked()).To(HaveLen(1))
				Expect(docs.Requests()).To(Equal(before))
				recs := auditFor(ns, docs.object(echo))
				last := recs[len(recs)-1]
				Expect([]string{last.Phase, last.Reason, last.Approval}).To(Equal([]string{audit.PhaseDenied, audit.DenyApprovalDeclined, "Required"}))
			}

			By("a client that cannot ask a human: refused")
			before := docs.Requests()
			isErr, txt = call(a.connect(nil, era), docs.local(echo), map[string]any{"text": "x"})
			Expect(isErr).To(BeTrue())
			Expect(txt).To(ContainSubstring("did not declare the elicitation capability"))
			Expect(docs.Requests()).To(Equal(before))
			recs = auditFor(ns, docs.object(echo))
			last := recs[len(recs)-1]
			Expect([]string{last.Phase, last.Reason, last.Approval}).To(Equal([]string{audit.PhaseDenied, audit.DenyApprovalNoChannel, "Required"}))
			Expect(docs.Calls(echo)).To(Equal(1), "only the approved call reached the tool")
		},
		Entry("in the initialize era (elicitation on the session)", legacyEra),
		Entry("in the 2026-07-28 era (input-required result)", modernEra),
	)

	It("accepts an approval only with the signed state of the same call, once (2026-07-28)", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail}, withApproval())
		a := newAgent(ns, "bot")
		a.grant()
		a.ceiling(mcpv1alpha1.DataClassInternal, mcpv1alpha1.ApprovalClientElicitation)
		// The client answers by hand, so the test controls what comes back.
		cs := a.connect(&sdk.ClientOptions{
			ElicitationHandler: (&approver{action: "accept", approve: true}).handle,
			MultiRoundTrip:     &sdk.MultiRoundTripOptions{Disabled: true},
		}, modernEra)
		ctx := context.Background()
		one := map[string]any{"text": "one"}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: docs.local(echo), Arguments: one})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.NeedsInput()).To(BeTrue())
		Expect(res.InputRequests).To(HaveKey("approval"))
		state := res.RequestState
		Expect(state).NotTo(BeEmpty())
		yes := sdk.InputResponseMap{"approval": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}

		before := docs.Requests()
		body, sig, _ := strings.Cut(state, ".")
		for what, p := range map[string]*sdk.CallToolParams{
			"a forged state":           {Name: docs.local(echo), Arguments: one, InputResponses: yes, RequestState: "forged"},
			"a state with another MAC": {Name: docs.local(echo), Arguments: one, InputResponses: yes, RequestState: body + "." + strings.Repeat("A", len(sig))},
			"other arguments":          {Name: docs.local(echo), Arguments: map[string]any{"text": "two"}, InputResponses: yes, RequestState: state},
			"another tool":             {Name: docs.local(fail), Arguments: one, InputResponses: yes, RequestState: state},
		} {
			res, err := cs.CallTool(ctx, p)
			Expect(err).NotTo(HaveOccurred(), what)
			Expect(res.IsError).To(BeTrue(), what)
			Expect(text(res)).To(ContainSubstring("does not belong to this call"), what)
		}
		Expect(docs.Requests()).To(Equal(before), "no refused answer reached the upstream")

		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: docs.local(echo), Arguments: one, InputResponses: yes, RequestState: state})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), text(res))
		Expect(text(res)).To(Equal("one"))
		Expect(docs.Calls(echo)).To(Equal(1))

		// A client that re-sends the approved request (a retry, a bug)
		// does not get a second call out of one approval.
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: docs.local(echo), Arguments: one, InputResponses: yes, RequestState: state})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeTrue())
		Expect(text(res)).To(ContainSubstring("already used"))
		Expect(docs.Calls(echo)).To(Equal(1))
	})
})

var _ = Describe("Audit", func() {
	It("refuses every call while its audit record cannot be written, and the upstream receives nothing", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		a := newAgent(ns, "bot").allowInternal()
		cs := a.connect(nil, modernEra)

		auditLog.setFailing(true)
		DeferCleanup(auditLog.setFailing, false)
		before := docs.Requests()
		isErr, txt := call(cs, docs.local(echo), map[string]any{"text": "x"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(Equal("Refused by the MCP catalog gateway: the call was refused because its audit record could not be written"))
		Expect(docs.Requests()).To(Equal(before))

		auditLog.setFailing(false)
		isErr, _ = call(cs, docs.local(echo), map[string]any{"text": "x"})
		Expect(isErr).To(BeFalse(), "calls resume once the sink works")
		Expect(docs.Calls(echo)).To(Equal(1))
	})

	It("records each call made before and after it under one call id, and each refusal once", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail})
		a := newAgent(ns, "bot").allowInternal()
		cs := a.connect(nil, modernEra)

		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				defer GinkgoRecover()
				isErr, _ := call(cs, docs.local(echo), map[string]any{"text": fmt.Sprint(i)})
				Expect(isErr).To(BeFalse())
			})
		}
		wg.Wait()
		call(cs, docs.local(fail), nil)
		// Disabled, so never offered: refused by the gate all the same.
		call(cs, docs.local(mcpserver.ToolNested), nil)

		byCall := map[string][]string{}
		var order []string
		for _, tool := range []string{echo, fail, mcpserver.ToolNested} {
			for _, r := range auditFor(ns, docs.object(tool)) {
				if _, seen := byCall[r.CallID]; !seen {
					order = append(order, r.CallID)
				}
				byCall[r.CallID] = append(byCall[r.CallID], r.Phase)
			}
		}
		Expect(byCall).To(HaveLen(6))
		made, denied := 0, 0
		for _, id := range order {
			switch byCall[id][0] {
			case audit.PhaseBefore:
				Expect(byCall[id]).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))
				made++
			default:
				Expect(byCall[id]).To(Equal([]string{audit.PhaseDenied}))
				denied++
			}
		}
		Expect([]int{made, denied}).To(Equal([]int{5, 1}))
		recs := auditFor(ns, docs.object(mcpserver.ToolNested))
		Expect([]string{recs[0].Reason, recs[0].Detail}).To(Equal([]string{audit.DenyNotServable, mcpv1alpha1.ReasonDisabled}))
	})
})

var _ = Describe("Cancellation", func() {
	DescribeTable("stops the upstream leg within about a second when the agent cancels",
		func(era string) {
			ns := newNamespace()
			// A stateless go-sdk upstream ends a tool handler as soon as the
			// request carrying it goes away.
			docs := newUpstream(ns, "docs", mcpserver.Options{Stateless: true}, []string{slow})
			a := newAgent(ns, "bot").allowInternal()
			cs := a.connect(nil, era)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: docs.local(slow)})
				errc <- err
			}()
			_, started := docs.Await(10*time.Second, func(s mcpserver.Stats) bool { return s.SlowStarted == 1 })
			Expect(started).To(BeTrue())
			cancel()
			cancelledAt := time.Now()
			_, stopped := docs.Await(1500*time.Millisecond, func(s mcpserver.Stats) bool { return s.SlowCancelled == 1 })
			Expect(stopped).To(BeTrue(), "the upstream handler ended because its request was cancelled")
			GinkgoWriter.Printf("upstream leg stopped %s after the agent cancelled\n", time.Since(cancelledAt))
			// The server counts the dropped request from a context callback
			// of its own, which may run just after the handler ended.
			st, aborted := docs.Await(2*time.Second, func(s mcpserver.Stats) bool { return s.Aborted >= 1 })
			Expect(aborted).To(BeTrue(), "the upstream saw the gateway drop the request")
			Expect(st.SlowCompleted).To(BeZero())
			Eventually(errc).Should(Receive(HaveOccurred()))

			Eventually(func() []string { return phases(auditFor(ns, docs.object(slow))) }, 5*time.Second, 50*time.Millisecond).
				Should(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))
			recs := auditFor(ns, docs.object(slow))
			Expect([]string{recs[1].Outcome, recs[1].ErrorKind}).To(Equal([]string{"Failed", "Cancelled"}))
		},
		Entry("in the initialize era (notifications/cancelled)", legacyEra),
		Entry("in the 2026-07-28 era (the request goes away)", modernEra),
	)
})

// phases lists the phases of audit records in order.
func phases(recs []auditRecord) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Phase)
	}
	return out
}

// counterValue reads a counter of the operator's metrics.
func counterValue(c prometheus.Counter) float64 {
	GinkgoHelper()
	var m dto.Metric
	Expect(c.Write(&m)).To(Succeed())
	return m.GetCounter().GetValue()
}

var _ = Describe("Secrets", func() {
	It("never show up in logs, audit records, Events, metrics or spans", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail})
		a := newAgent(ns, "bot")
		a.grant(docs.object(echo))
		a.ceiling(mcpv1alpha1.DataClassInternal)
		cs := a.connect(nil, modernEra)
		isErr, _ := call(cs, docs.local(echo), map[string]any{"text": "hello"})
		Expect(isErr).To(BeFalse())
		isErr, _ = call(cs, docs.local(fail), nil)
		Expect(isErr).To(BeTrue(), "refused: RBAC")
		Expect(postInitialize(tokenFor(ns, "bot", "elsewhere")).StatusCode).To(Equal(http.StatusUnauthorized))
		// A failed upstream call logs and emits an Event too.
		docs.Close()
		isErr, _ = call(cs, docs.local(echo), nil)
		Expect(isErr).To(BeTrue(), "unreachable")
		// The credential was really used, so its absence below means
		// something.
		Expect(docs.Stats().LastCredential).To(Equal("Bearer " + docs.secret))
		Eventually(func(g Gomega) []string {
			var evs eventsv1.EventList
			g.Expect(k8sClient.List(context.Background(), &evs, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				reasons = append(reasons, e.Reason)
			}
			return reasons
		}, 10*time.Second, 100*time.Millisecond).Should(ContainElements("CallRefused", "CallFailed"))

		haystacks := map[string]string{
			"manager logs":  logs.String(),
			"audit records": strings.Join(auditLog.all(), "\n"),
			"Events":        allEvents(),
			"metrics":       metricsText(),
			"spans":         spansText(),
		}
		Expect(haystacks["audit records"]).To(ContainSubstring(docs.object(echo)))
		Expect(haystacks["spans"]).To(ContainSubstring(docs.local(echo)))
		Expect(haystacks["Events"]).To(ContainSubstring("CallFailed"))
		Expect(haystacks["metrics"]).To(ContainSubstring("mcp_catalog_gateway_calls_total"))

		secrets := secretsUsed.All()
		for _, t := range tokensUsed.All() {
			// The whole token, and its signature alone: a log that cut the
			// token would still leak it with the signature.
			secrets = append(secrets, t)
			if i := strings.LastIndex(t, "."); i >= 0 {
				secrets = append(secrets, t[i+1:])
			}
		}
		Expect(secrets).To(ContainElements(docs.secret, a.token))
		for where, text := range haystacks {
			for _, s := range secrets {
				Expect(strings.Contains(text, s)).To(BeFalse(), "a secret appears in the %s", where)
			}
		}
	})
})

// allEvents renders every Event of the cluster, of both Event APIs.
func allEvents() string {
	GinkgoHelper()
	var b strings.Builder
	var core corev1.EventList
	Expect(k8sClient.List(context.Background(), &core)).To(Succeed())
	var modern eventsv1.EventList
	Expect(k8sClient.List(context.Background(), &modern)).To(Succeed())
	for _, l := range []any{core.Items, modern.Items} {
		j, err := json.Marshal(l)
		Expect(err).NotTo(HaveOccurred())
		b.Write(j)
	}
	return b.String()
}

// metricsText is the text exposition of the registry the manager serves.
// spansText renders every span the suite's gateway ended: names, status
// and attributes.
func spansText() string {
	var b strings.Builder
	for _, s := range spans.Ended() {
		fmt.Fprintf(&b, "%s %s %s\n", s.Name(), s.Status().Code, s.Status().Description)
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, "  %s=%s\n", kv.Key, kv.Value.String())
		}
	}
	return b.String()
}

func metricsText() string {
	GinkgoHelper()
	mfs, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var b strings.Builder
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&b, mf)
		Expect(err).NotTo(HaveOccurred())
	}
	return b.String()
}
