package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The official MCP TypeScript SDK's client (test/tsagent), a peer written
// apart from the go-sdk the rest of the suite uses: it speaks 2025-11-25
// over Streamable HTTP, with the headers, session handling and extra GET
// its own authors chose.
var _ = Describe("The MCP TypeScript SDK's client", func() {
	It("initializes in 2025-11-25, lists and calls only its granted tool, pings, and is refused the other", func() {
		ns := newNamespace()
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo, fail})
		a := newAgent(ns, "ts-agent")
		a.grant(docs.object(echo))
		a.ceiling(mcpv1alpha1.DataClassInternal)

		arg := fmt.Sprintf("from-typescript-%016x", rand.Uint64())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := tsagent.Run(ctx, gatewayURL, a.token,
			tsagent.List(),
			tsagent.Call(docs.local(echo), map[string]any{"text": arg}),
			tsagent.Ping(),
			tsagent.Call(docs.local(fail), nil),
		)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Connect.Error).To(BeNil())
		Expect(res.Connect.ProtocolVersion).To(Equal(legacyEra), "the SDK asks for its latest revision, and the gateway serves it")
		Expect(res.Steps).To(HaveLen(4))
		for _, o := range res.Steps {
			Expect(o.Error).To(BeNil(), o.Op)
		}

		By("listing: the granted tool, not the other enabled one")
		Expect(res.Steps[0].Tools).To(Equal([]string{docs.local(echo)}))

		By("calling it: the upstream's answer, with the server's credential")
		Expect(res.Steps[1].IsError).To(BeFalse(), res.Steps[1].Text())
		Expect(res.Steps[1].Text()).To(Equal(arg))
		Expect(docs.Calls(echo)).To(Equal(1))
		Expect(docs.Stats().LastCredential).To(Equal("Bearer " + docs.secret))
		recs := auditFor(ns, docs.object(echo))
		Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter}))
		Expect(recs[0].Caller).To(Equal("system:serviceaccount:" + ns + ":ts-agent"))
		Expect([]string{recs[0].Decision, recs[1].Outcome}).To(Equal([]string{"Allowed", "Succeeded"}))

		By("calling the tool it was not granted: refused, audited, nothing sent")
		refused := res.Steps[3]
		Expect(refused.IsError).To(BeTrue())
		Expect(refused.Text()).To(HavePrefix("Refused by the MCP catalog gateway: "))
		Expect(refused.Text()).To(ContainSubstring(`RBAC verb "call"`))
		Expect(docs.Calls(fail)).To(BeZero())
		denied := auditFor(ns, docs.object(fail))
		Expect(denied).NotTo(BeEmpty())
		last := denied[len(denied)-1]
		Expect([]string{last.Phase, last.Reason, last.Caller}).To(Equal([]string{audit.PhaseDenied, audit.DenyForbidden, "system:serviceaccount:" + ns + ":ts-agent"}))

		By("over HTTP: every request after initialize carries the session and the revision, and none failed")
		Expect(res.HTTP.Errors).To(BeEmpty(), "errors the SDK reported outside a step (such as its GET for the event stream)")
		Expect(res.HTTP.Requests).NotTo(BeEmpty())
		Expect(res.HTTP.Requests[0].RPC).To(Equal("initialize"))
		for _, r := range res.HTTP.Requests[1:] {
			Expect(r.SessionID).To(Equal(res.Connect.SessionID), "%+v", r)
			Expect(r.ProtocolVersion).To(Equal(legacyEra), "%+v", r)
			if r.Method == http.MethodPost {
				Expect(r.Status).To(BeNumerically("<", 300), "%+v", r)
			}
		}
	})
})
