package integration_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
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
	It("is imported and its tools are called through the gateway by the go-sdk in both eras and by the TypeScript SDK's client", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		ref := declare(ns, "everything", srv.URL, []string{tsagent.EverythingEcho, tsagent.EverythingSum, tsagent.EverythingStructuredContent, tsagent.EverythingTinyImage})
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
		Expect(res.Steps[0].Tools).To(ConsistOf(ref.local(tsagent.EverythingEcho), ref.local(tsagent.EverythingSum), ref.local(tsagent.EverythingStructuredContent), ref.local(tsagent.EverythingTinyImage)))
		Expect(res.Steps[1].Text()).To(Equal("Echo: " + arg))
		Expect(res.Steps[2].Text()).To(ContainSubstring("3"))

		By("typed results, as the server answers them directly: structured content checked against its output schema, an image byte for byte")
		direct := directSession(ctx, srv.URL)
		wantWeather := callTyped(direct, tsagent.EverythingStructuredContent, map[string]any{"location": "Chicago"})
		Expect(wantWeather.StructuredContent).NotTo(BeNil())
		wantImage := callTyped(direct, tsagent.EverythingTinyImage, map[string]any{})
		wantPNG := imageOf(wantImage)
		Expect(wantPNG.MIMEType).To(Equal("image/png"))
		Expect(direct.Close()).To(Succeed())
		Expect(ref.tool(tsagent.EverythingStructuredContent).Status.OutputSchema).NotTo(BeNil(), "the import keeps the output schema")
		for _, era := range []string{modernEra, legacyEra} {
			cs := bot.connect(nil, era)
			got := callTyped(cs, ref.local(tsagent.EverythingStructuredContent), map[string]any{"location": "Chicago"})
			Expect(got.IsError).To(BeFalse(), era)
			Expect(structured(got)).To(MatchJSON(structured(wantWeather)), era)
			img := callTyped(cs, ref.local(tsagent.EverythingTinyImage), nil)
			Expect(img.IsError).To(BeFalse(), era)
			gotPNG := imageOf(img)
			Expect(gotPNG.MIMEType).To(Equal("image/png"), era)
			Expect(gotPNG.Data).To(Equal(wantPNG.Data), era)
			Expect(cs.Close()).To(Succeed())
		}
		typed, err := tsagent.Run(ctx, gatewayURL, bot.token,
			tsagent.List(),
			tsagent.Call(ref.local(tsagent.EverythingStructuredContent), map[string]any{"location": "Chicago"}),
			tsagent.Call(ref.local(tsagent.EverythingTinyImage), nil),
		)
		Expect(err).NotTo(HaveOccurred())
		Expect(typed.Steps).To(HaveLen(3))
		for _, o := range typed.Steps {
			Expect(o.Error).To(BeNil(), o.Op)
		}
		Expect(string(typed.Steps[1].StructuredContent)).To(MatchJSON(structured(wantWeather)), "the TypeScript client checked it against the listed output schema")
		var pngs []tsagent.Content
		for _, c := range typed.Steps[2].Content {
			if c.Type == "image" {
				pngs = append(pngs, c)
			}
		}
		Expect(pngs).To(HaveLen(1))
		Expect(pngs[0].MimeType).To(Equal("image/png"))
		Expect(pngs[0].Data).To(Equal(base64.StdEncoding.EncodeToString(wantPNG.Data)))

		By("an agent whose access policy blocks images: the image removed with a note, the server's text kept, the removal audited")
		plain := newAgent(ns, "plain").allowInternal()
		plain.inspectResults(mcpv1alpha1.ResultInspection{BlockedContentTypes: []mcpv1alpha1.ResultContentType{mcpv1alpha1.ResultContentImage}})
		Eventually(func(g Gomega) {
			cs := plain.connect(nil, legacyEra)
			defer cs.Close()
			res := callTyped(cs, ref.local(tsagent.EverythingTinyImage), nil)
			g.Expect(res.IsError).To(BeFalse())
			var texts []string
			for _, c := range res.Content {
				_, isImage := c.(*sdk.ImageContent)
				g.Expect(isImage).To(BeFalse(), "an image passed")
				if t, ok := c.(*sdk.TextContent); ok {
					texts = append(texts, t.Text)
				}
			}
			g.Expect(texts).To(HaveLen(3))
			g.Expect(texts[0]).To(ContainSubstring("1 part of this result removed"))
			g.Expect(texts[1:]).To(Equal([]string{"Here's the image you requested:", "The image above is the MCP logo."}))
		}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
		last := auditFor(ns, ref.object(tsagent.EverythingTinyImage))
		Expect(last[len(last)-1].Inspection).To(ContainElement("ContentType"))

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

// directSession is a go-sdk client session with the reference server
// itself, not through the gateway: what the server answers.
func directSession(ctx context.Context, url string) *sdk.ClientSession {
	GinkgoHelper()
	c := sdk.NewClient(&sdk.Implementation{Name: "direct", Version: "v1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	Expect(err).NotTo(HaveOccurred())
	return cs
}

// imageOf is a result's one image.
func imageOf(res *sdk.CallToolResult) *sdk.ImageContent {
	GinkgoHelper()
	var out []*sdk.ImageContent
	for _, c := range res.Content {
		if img, ok := c.(*sdk.ImageContent); ok {
			out = append(out, img)
		}
	}
	Expect(out).To(HaveLen(1))
	return out[0]
}
