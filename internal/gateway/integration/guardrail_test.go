package integration_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/toolname"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// guardKey signs the gateway's requests to the suite's guardrail.
var guardKey = []byte(strings.Repeat("r", 32))

// guardService is the suite's guardrail webhook. It allows everything,
// except in the namespaces a spec gave a behaviour of their own, and
// counts requests whose signature does not verify.
type guardService struct {
	srv *httptest.Server

	mu       sync.Mutex
	behave   map[string]guardBehaviour
	asked    map[string][]guardrail.Request
	badSigns int
}

// guardBehaviour is how the service answers a namespace's checks.
type guardBehaviour struct {
	refuseRequest bool   // refuse every call and every prompt's arguments
	replaceResult string // replace every result with this, when set
	down          bool   // answer 503
}

var guard *guardService

func startGuard() *guardService {
	g := &guardService{behave: map[string]guardBehaviour{}, asked: map[string][]guardrail.Request{}}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req guardrail.Request
		_ = json.Unmarshal(body, &req)
		g.mu.Lock()
		if !guardrail.Verify(guardKey, r.Header.Get(guardrail.SignatureHeader), body, time.Now(), time.Minute) {
			g.badSigns++
		}
		g.asked[req.Namespace] = append(g.asked[req.Namespace], req)
		b := g.behave[req.Namespace]
		g.mu.Unlock()
		switch {
		case b.down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case (req.Phase == guardrail.PhaseRequest || req.Phase == guardrail.PhasePromptRequest) && b.refuseRequest:
			_, _ = io.WriteString(w, `{"allow":false,"reason":"no exports of customer data"}`)
		case req.Phase == guardrail.PhaseResult && b.replaceResult != "":
			out, _ := json.Marshal(map[string]any{"allow": true, "result": b.replaceResult})
			_, _ = w.Write(out)
		default:
			_, _ = io.WriteString(w, `{"allow":true}`)
		}
	}))
	return g
}

func (g *guardService) set(ns string, b guardBehaviour) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.behave[ns] = b
}

func (g *guardService) askedOf(ns string) []guardrail.Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]guardrail.Request(nil), g.asked[ns]...)
}

var _ = Describe("The guardrail webhook", func() {
	It("is asked, signed, about every call with its arguments and every result, and its refusal and replacement reach the agent", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		bot := newAgent(ns, "bot").allowInternal()

		isErr, txt := call(bot.connect(nil, modernEra), docs.local(echo), map[string]any{"text": "hello"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("hello"))
		asked := guard.askedOf(ns)
		Expect(asked).To(HaveLen(2))
		Expect([]string{asked[0].Phase, string(asked[0].Arguments), asked[0].DataClass, asked[0].Caller}).To(Equal([]string{guardrail.PhaseRequest, `{"text":"hello"}`, "Internal", "system:serviceaccount:" + ns + ":bot"}))
		Expect(asked[1].Phase).To(Equal(guardrail.PhaseResult))
		Expect(*asked[1].Result).To(Equal("hello"))
		Expect(asked[0].CallID).To(Equal(asked[1].CallID))
		// The webhook judged the very bytes the audit record's hash names.
		sum := sha256.Sum256(asked[0].Arguments)
		first := auditFor(ns, docs.object(echo))
		Expect(first[len(first)-1].ArgumentsHash).To(Equal("sha256:" + hex.EncodeToString(sum[:])))

		guard.set(ns, guardBehaviour{replaceResult: "[summarised by the guardrail]"})
		isErr, txt = call(bot.connect(nil, legacyEra), docs.local(echo), map[string]any{"text": "hello"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("[summarised by the guardrail]"))
		recs := auditFor(ns, docs.object(echo))
		Expect(recs[len(recs)-1].Guardrail).To(Equal(audit.GuardrailReplaced))

		guard.set(ns, guardBehaviour{refuseRequest: true})
		calls := docs.Calls(echo)
		isErr, txt = call(bot.connect(nil, modernEra), docs.local(echo), map[string]any{"text": "hello"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(Equal("Refused by the MCP catalog gateway: the guardrail refused this call: no exports of customer data"))
		Expect(docs.Calls(echo)).To(Equal(calls), "a refused call is not sent")
		recs = auditFor(ns, docs.object(echo))
		last := recs[len(recs)-1]
		Expect([]string{last.Phase, last.Reason, last.Guardrail}).To(Equal([]string{audit.PhaseDenied, audit.DenyGuardrail, audit.GuardrailRefused}))
		guard.mu.Lock()
		Expect(guard.badSigns).To(BeZero())
		guard.mu.Unlock()
	})

	It("is asked about a prompt's arguments before the get, and its refusal keeps them from the server (attack)", func() {
		ns := newNamespace()
		up := mcpserver.StartFeatures(GinkgoT(), 1024)
		declare(ns, "docs", up.URL, nil)
		prompt, err := toolname.ObjectName("docs", mcpserver.PromptReview)
		Expect(err).NotTo(HaveOccurred())
		enableFeature(ns, &mcpv1alpha1.McpPrompt{}, prompt)
		bot := newAgent(ns, "bot")
		grantFeatures(bot)
		bot.ceiling(mcpv1alpha1.DataClassInternal)
		cs := bot.connect(nil, legacyEra)
		const language = "Zig-from-the-guardrail-spec"
		get := func() error {
			_, err := cs.GetPrompt(ctx(), &sdk.GetPromptParams{Name: "mcp_docs_" + mcpserver.PromptReview, Arguments: map[string]string{"language": language}})
			return err
		}

		Expect(get()).To(Succeed())
		asked := guard.askedOf(ns)
		Expect(asked).To(HaveLen(2))
		Expect([]string{asked[0].Phase, string(asked[0].Arguments), asked[0].Tool, asked[0].Server}).To(Equal([]string{guardrail.PhasePromptRequest, `{"language":"` + language + `"}`, ns + "/" + prompt, ns + "/docs"}))
		Expect(asked[1].Phase).To(Equal(guardrail.PhasePrompt))
		Expect(asked[0].CallID).To(Equal(asked[1].CallID), "one get, asked about twice")

		guard.set(ns, guardBehaviour{refuseRequest: true})
		gets := up.Gets()
		Expect(get()).To(MatchError(ContainSubstring("the guardrail refused this prompt's arguments: no exports of customer data")))
		Expect(up.Gets()).To(Equal(gets), "a refused get is not sent")
		recs := auditFor(ns, prompt)
		last := recs[len(recs)-1]
		Expect([]string{last.Phase, last.Reason, last.Guardrail}).To(Equal([]string{audit.PhaseDenied, audit.DenyGuardrail, audit.GuardrailRefused}))
		Expect(strings.Join(auditLog.all(), "\n")).NotTo(ContainSubstring(language), "the record hashes the arguments, never holds them")
	})

	It("fails closed for Confidential tools and open below while it gives no answer", func() {
		ns := newNamespace()
		internal := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo})
		secret := newUpstream(ns, "hr", mcpserver.Options{}, []string{echo}, func(s *mcpv1alpha1.McpServerSpec) { s.DataClass = mcpv1alpha1.DataClassConfidential })
		bot := newAgent(ns, "bot")
		bot.grant()
		bot.ceiling(mcpv1alpha1.DataClassConfidential)
		guard.set(ns, guardBehaviour{down: true})

		cs := bot.connect(nil, modernEra)
		isErr, txt := call(cs, internal.local(echo), map[string]any{"text": "still here"})
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(Equal("still here"))
		recs := auditFor(ns, internal.object(echo))
		Expect(recs[len(recs)-1].Guardrail).To(Equal(audit.GuardrailUnavailable))

		calls := secret.Calls(echo)
		isErr, txt = call(cs, secret.local(echo), map[string]any{"text": "payroll"})
		Expect(isErr).To(BeTrue())
		Expect(txt).To(ContainSubstring("the guardrail could not be asked about this call, and calls of Confidential tools are not made without it"))
		Expect(secret.Calls(echo)).To(Equal(calls))
		recs = auditFor(ns, secret.object(echo))
		Expect([]string{recs[len(recs)-1].Phase, recs[len(recs)-1].Reason}).To(Equal([]string{audit.PhaseDenied, audit.DenyGuardrailUnavailable}))
	})

	It("fails closed for the TypeScript SDK's client as for any other", func() {
		ns := newNamespace()
		secret := newUpstream(ns, "hr", mcpserver.Options{}, []string{echo}, func(s *mcpv1alpha1.McpServerSpec) { s.DataClass = mcpv1alpha1.DataClassConfidential })
		a := newAgent(ns, "ts-agent")
		a.grant(secret.object(echo))
		a.ceiling(mcpv1alpha1.DataClassConfidential)
		guard.set(ns, guardBehaviour{down: true})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := tsagent.Run(ctx, gatewayURL, a.token, tsagent.Call(secret.local(echo), map[string]any{"text": "payroll"}))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Steps).To(HaveLen(1))
		Expect(res.Steps[0].Error).To(BeNil())
		Expect(res.Steps[0].IsError).To(BeTrue())
		Expect(res.Steps[0].Text()).To(ContainSubstring("calls of Confidential tools are not made without it"))
		Expect(secret.Calls(echo)).To(BeZero())
	})
})
