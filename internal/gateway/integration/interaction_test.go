package integration_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
		srv, err := tsagent.StartEverything(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Stop)

		ns := newNamespace()
		interactive := []string{"trigger-elicitation-request", "trigger-url-elicitation", "trigger-sampling-request"}
		ref := declare(ns, "everything", srv.URL, interactive)
		for _, remote := range interactive {
			Expect(ref.tool(remote).Status.DefinitionHash).NotTo(BeEmpty(), remote)
		}

		By("a call whose elicitation the gateway does not relay is declined upstream, never answered for the agent")
		bot := newAgent(ns, "bot").allowInternal()
		cs := bot.connect(nil, legacyEra)
		isErr, txt := call(cs, ref.local("trigger-elicitation-request"), nil)
		Expect(isErr).To(BeFalse(), txt)
		Expect(txt).To(ContainSubstring("declined"))
	})
})
