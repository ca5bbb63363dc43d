package integration_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// A server's requests for input during a call: elicitation and sampling
// (ADR 064). The TypeScript reference server offers its tools that ask for
// them only to a client that declares the capabilities, as the operator's
// client does when it imports: the catalog is the one agents will be
// offered.
var _ = Describe("Interaction with the upstream during a call", func() {
	It("imports the tools the reference server offers only to clients declaring elicitation and sampling", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		interactive := []string{"trigger-elicitation-request", "trigger-url-elicitation", "trigger-sampling-request"}
		ref := declare(ns, "everything", srv.URL, append(interactive, tsagent.EverythingLongRunning))
		roundsURL, states := roundsUpstream()
		rounds := declare(ns, "rounds", roundsURL, []string{"greet"})
		for _, remote := range interactive {
			Expect(ref.tool(remote).Status.DefinitionHash).NotTo(BeEmpty(), remote)
		}

		By("its elicitation is asked of the agent that made the call, in its session; its sampling request is refused without asking it (the tool's default policy)")
		bot := newAgent(ns, "bot").allowInternal()
		var mu sync.Mutex
		var elicited, sampled int
		cs := bot.connect(&sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				mu.Lock()
				elicited++
				mu.Unlock()
				return &sdk.ElicitResult{Action: "decline"}, nil
			},
			CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) { //nolint:staticcheck // deprecated in 2026-07-28, still what clients and servers of the initialize era send
				mu.Lock()
				sampled++
				mu.Unlock()
				return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "sampled"}}, nil //nolint:staticcheck // deprecated in 2026-07-28, still what clients and servers of the initialize era send
			},
		}, legacyEra)
		isErr, txt := call(cs, ref.local("trigger-elicitation-request"), nil)
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(ContainSubstring("declined"))
		callCtx, cancelCall := context.WithTimeout(ctx, 20*time.Second)
		res, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: ref.local("trigger-sampling-request"), Arguments: map[string]any{"prompt": "hello"}})
		cancelCall()
		if err == nil {
			Expect(text(res)).NotTo(ContainSubstring("sampled"))
		}
		mu.Lock()
		Expect([]int{elicited, sampled}).To(Equal([]int{1, 0}))
		mu.Unlock()

		By("the progress the server reports of a call reaches the agent that asked for it, under its token, in both eras")
		for _, era := range []string{modernEra, legacyEra} {
			var mu sync.Mutex
			var seen []*sdk.ProgressNotificationParams
			cs := bot.connect(&sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
				mu.Lock()
				seen = append(seen, req.Params)
				mu.Unlock()
			}}, era)
			callCtx, cancelCall := context.WithTimeout(ctx, 20*time.Second)
			res, err := cs.CallTool(callCtx, &sdk.CallToolParams{
				Name:      ref.local(tsagent.EverythingLongRunning),
				Arguments: map[string]any{"duration": 0.3, "steps": 3},
				Meta:      sdk.Meta{"progressToken": "tok-" + era},
			})
			cancelCall()
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			mu.Lock()
			Expect(seen).To(HaveLen(3), era)
			for i, p := range seen {
				Expect(p.ProgressToken).To(Equal("tok-"+era), era)
				Expect([]float64{p.Progress, p.Total}).To(Equal([]float64{float64(i + 1), 3}), era)
			}
			mu.Unlock()
		}

		By("the official TypeScript SDK's client as the calling agent: it is asked the server's form in its own session, its answer reaches the server, and the progress of its call reaches it")
		ts, err := tsagent.Start(ctx, gatewayURL, bot.token, tsagent.Options{
			Elicit: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace", "check": true}},
		},
			tsagent.Call(ref.local("trigger-elicitation-request"), nil),
			tsagent.CallWithProgress(ref.local(tsagent.EverythingLongRunning), map[string]any{"duration": 0.3, "steps": 3}),
			tsagent.Call(rounds.local("greet"), nil),
		)
		Expect(err).NotTo(HaveOccurred())
		seen, err := ts.Wait()
		Expect(err).NotTo(HaveOccurred())
		Expect(seen.Connect.Error).To(BeNil())
		Expect(seen.Connect.SessionID).To(BeTrue())
		Expect(seen.Steps).To(HaveLen(3))
		asked := seen.Steps[0]
		Expect(asked.Error).To(BeNil())
		Expect(asked.IsError).To(BeFalse(), asked.Text())
		Expect(asked.Elicitations).To(HaveLen(1))
		Expect(asked.Elicitations[0].Mode).To(Equal("form"))
		Expect(asked.Elicitations[0].Fields).To(ContainElements("name", "check"))
		// The server's result reports what the user answered.
		Expect(asked.Text()).To(ContainSubstring("Ada Lovelace"))
		long := seen.Steps[1]
		Expect(long.Error).To(BeNil())
		Expect(long.IsError).To(BeFalse(), long.Text())
		Expect(long.Progress).To(HaveLen(3))
		for i, p := range long.Progress {
			Expect(p[0]).NotTo(BeNil())
			Expect(*p[0]).To(Equal(float64(i + 1)))
		}

		By("a 2026-07-28 server's round during the TypeScript client's call is asked of it in its 2025-11-25 session, and the server is called again with its answer under the server's own state")
		round := seen.Steps[2]
		Expect(round.Error).To(BeNil())
		Expect(round.IsError).To(BeFalse(), round.Text())
		Expect(round.Text()).To(Equal("Hello, Ada Lovelace"))
		Expect(round.Elicitations).To(HaveLen(1))
		Expect(round.Elicitations[0].Mode).To(Equal("form"))
		Expect(round.Elicitations[0].Fields).To(Equal([]string{"name"}))
		Expect(states()).To(Equal([]string{"", "the-servers-own-state"}))
	})

	It("asks a 2026-07-28 agent the initialize-era server's form as a round while the approved call waits, and does not ask for approval again", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		ref := declare(ns, "everything", srv.URL, []string{"trigger-elicitation-request"}, withApproval())
		bot := newAgent(ns, "bot")
		bot.grant()
		bot.ceiling(mcpv1alpha1.DataClassInternal, mcpv1alpha1.ApprovalClientElicitation)

		By("the go-sdk client's own round loop: the approval question, then the server's form, each asked once")
		var mu sync.Mutex
		var asked []string
		cs := bot.connect(&sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			// One person answers both: the approval and the server's form.
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "name": "Ada Lovelace", "check": true}}, nil
		}}, modernEra)
		isErr, txt := call(cs, ref.local("trigger-elicitation-request"), nil)
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(ContainSubstring("Ada Lovelace"))
		mu.Lock()
		Expect(asked).To(HaveLen(2), "%q", asked)
		Expect(asked[0]).To(ContainSubstring("the tool " + ref.local("trigger-elicitation-request")))
		mu.Unlock()

		By("audited as one approved call that asked, and its answer, which continues it")
		var seen []string
		for _, r := range auditFor(ns, ref.object("trigger-elicitation-request")) {
			if r.Phase == audit.PhaseBefore || r.Phase == audit.PhaseAfter {
				seen = append(seen, r.Phase+"/"+r.Approval+"/"+r.Outcome)
			}
		}
		Expect(seen).To(Equal([]string{
			audit.PhaseBefore + "/Approved/",
			audit.PhaseAfter + "/Approved/" + audit.OutcomeInputRequired,
			audit.PhaseBefore + "/Approved/",
			audit.PhaseAfter + "/Approved/" + audit.OutcomeSucceeded,
		}))
	})
})
