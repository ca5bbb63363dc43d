package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The MCP TypeScript reference server (server-everything, from npm), a
// server written apart from every peer of ours: it speaks 2025-11-25 with
// sessions kept in its process and registers its tools with the
// TypeScript SDK's own server, schemas generated from zod. The operator
// imports its catalog and the gateway serves it to agents of every client
// and era we test with.
var _ = Describe("The MCP TypeScript reference server behind the gateway", func() {
	It("is imported and its text tools are called through the gateway by the go-sdk in both eras and by the TypeScript SDK's client", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv, err := tsagent.StartEverything(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Stop)

		ns := newNamespace()
		ref := declare(ns, "everything", srv.URL, []string{tsagent.EverythingEcho, tsagent.EverythingSum})
		bot := newAgent(ns, "bot").allowInternal()

		By("the import: the tools it offers every client, each an McpTool with the server's schema")
		for _, remote := range []string{tsagent.EverythingEcho, tsagent.EverythingSum, tsagent.EverythingStructuredContent, tsagent.EverythingTinyImage} {
			t := ref.tool(remote)
			Expect(t.Status.DefinitionHash).NotTo(BeEmpty(), remote)
			Expect(t.Status.InputSchema).NotTo(BeNil(), remote)
		}
		Expect(string(ref.tool(tsagent.EverythingSum).Status.InputSchema.Raw)).To(ContainSubstring(`"a"`))

		arg := fmt.Sprintf("through-the-gateway-%016x", rand.Uint64())
		for _, era := range []string{modernEra, legacyEra} {
			By("the go-sdk client in " + era)
			cs := bot.connect(nil, era)
			isErr, txt := call(cs, ref.local(tsagent.EverythingEcho), map[string]any{"message": arg})
			Expect(isErr).To(BeFalse(), txt)
			Expect(txt).To(Equal("Echo: " + arg))
			isErr, txt = call(cs, ref.local(tsagent.EverythingSum), map[string]any{"a": 2, "b": 40})
			Expect(isErr).To(BeFalse(), txt)
			Expect(txt).To(ContainSubstring("42"))
			Expect(cs.Close()).To(Succeed())
		}

		By("the TypeScript SDK's client")
		res, err := tsagent.Run(ctx, gatewayURL, bot.token,
			tsagent.List(),
			tsagent.Call(ref.local(tsagent.EverythingEcho), map[string]any{"message": arg}),
			tsagent.Call(ref.local(tsagent.EverythingSum), map[string]any{"a": 1, "b": 2}),
		)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Connect.Error).To(BeNil())
		Expect(res.Steps).To(HaveLen(3))
		for _, o := range res.Steps {
			Expect(o.Error).To(BeNil(), o.Op)
		}
		Expect(res.Steps[0].Tools).To(ConsistOf(ref.local(tsagent.EverythingEcho), ref.local(tsagent.EverythingSum)))
		Expect(res.Steps[1].Text()).To(Equal("Echo: " + arg))
		Expect(res.Steps[2].Text()).To(ContainSubstring("3"))

		By("every call audited as sent and answered")
		recs := auditFor(ns, ref.object(tsagent.EverythingEcho))
		Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter, audit.PhaseBefore, audit.PhaseAfter, audit.PhaseBefore, audit.PhaseAfter}))
		for _, r := range recs {
			if r.Phase == audit.PhaseAfter {
				Expect(r.Outcome).To(Equal("Succeeded"))
			}
		}
	})
})
