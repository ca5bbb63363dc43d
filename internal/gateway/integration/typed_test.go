package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// The remote tools of the typed upstream.
const (
	toolWeather = "weather"
	toolPicture = "picture"
	toolBundle  = "bundle"
	toolUsers   = "users"
	toolAlbum   = "album"
)

const weatherSchema = `{"type":"object","properties":{"temperature":{"type":"number"},"conditions":{"type":"string"}},"required":["temperature","conditions"],"additionalProperties":false}`

// picture is n bytes that are not text, the same for the same n.
func picture(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// typedUpstream starts a go-sdk server, speaking the revisions given (all
// it knows when none), whose tools return what is not text: structured
// content conforming to the output schema or not, an image of the size
// asked, embedded resources (text and binary), audio and a resource link.
func typedUpstream(versions ...string) string {
	GinkgoHelper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "typed", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: versions})
	args := func(req *sdk.CallToolRequest) map[string]any {
		m := map[string]any{}
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	srv.AddTool(&sdk.Tool{Name: toolWeather, InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string"},"note":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(weatherSchema)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			a := args(req)
			var sc any = map[string]any{"temperature": 22.5, "conditions": "Partly cloudy"}
			switch a["mode"] {
			case "invalid":
				sc = map[string]any{"temperature": "hot", "conditions": "Sunny"}
			case "missing":
				sc = nil
			case "note":
				sc = map[string]any{"temperature": 1e21, "conditions": a["note"]}
			}
			res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the weather"}}}
			if sc != nil {
				res.StructuredContent = sc
			}
			return res, nil
		})
	srv.AddTool(&sdk.Tool{Name: toolPicture, InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n, _ := args(req)["bytes"].(float64)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{Data: picture(int(n)), MIMEType: "image/png"},
				&sdk.TextContent{Text: "a picture"},
			}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: toolBundle, InputSchema: json.RawMessage(`{"type":"object","properties":{"secret":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			secret, _ := args(req)["secret"].(string)
			size := int64(42)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "the notes; key: " + secret}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///blob.bin", MIMEType: "application/octet-stream", Blob: picture(100)}},
				&sdk.AudioContent{Data: picture(50), MIMEType: "audio/wav"},
				&sdk.ResourceLink{URI: "https://files.example/report.pdf", Name: "report.pdf", Description: "the report", MIMEType: "application/pdf", Size: &size},
			}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: toolAlbum, InputSchema: json.RawMessage(`{"type":"object","properties":{"secret":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			secret, _ := args(req)["secret"].(string)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{Data: picture(400 << 10), MIMEType: "image/png"},
				&sdk.TextContent{Text: albumText(secret)},
				&sdk.AudioContent{Data: picture(200 << 10), MIMEType: "audio/wav"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///album.bin", MIMEType: "application/octet-stream", Blob: picture(150 << 10)}},
			}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: toolUsers, InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{StructuredContent: []any{map[string]any{"id": "1"}, map[string]any{"id": "2"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(h)
	DeferCleanup(hs.Close)
	return hs.URL + "/mcp"
}

// albumText is a long text with secret in its middle.
func albumText(secret string) string {
	return strings.Repeat("lorem ipsum ", 12<<10) + "key " + secret + " " + strings.Repeat("dolor sit ", 12<<10)
}

// callTyped calls a tool and returns the whole result.
func callTyped(cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	Expect(err).NotTo(HaveOccurred())
	return res
}

// structured is a result's structured content as JSON.
func structured(res *sdk.CallToolResult) string {
	GinkgoHelper()
	if res.StructuredContent == nil {
		return ""
	}
	b, err := json.Marshal(res.StructuredContent)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("Typed results", func() {
	DescribeTable("pass what is not text, whole, within the tool's bounds and its output schema",
		func(agentEra string, upstreamVersions ...string) {
			ns := newNamespace()
			up := declare(ns, "typed", typedUpstream(upstreamVersions...), []string{toolWeather, toolPicture, toolBundle, toolUsers, toolAlbum})
			bot := newAgent(ns, "bot").allowInternal()
			cs := bot.connect(nil, agentEra)

			By("listing the output schema the person approved")
			lr, err := cs.ListTools(context.Background(), nil)
			Expect(err).NotTo(HaveOccurred())
			schemas := map[string]string{}
			for _, t := range lr.Tools {
				if t.OutputSchema != nil {
					b, _ := json.Marshal(t.OutputSchema)
					schemas[t.Name] = string(b)
				}
			}
			Expect(schemas).To(HaveKey(up.local(toolWeather)))
			Expect(schemas[up.local(toolWeather)]).To(MatchJSON(weatherSchema))
			Expect(schemas).NotTo(HaveKey(up.local(toolUsers)), "an output schema whose root is not an object is not listed: not every revision can carry it")

			By("passing structured content that conforms")
			res := callTyped(cs, up.local(toolWeather), nil)
			Expect(res.IsError).To(BeFalse(), text(res))
			Expect(structured(res)).To(MatchJSON(`{"temperature":22.5,"conditions":"Partly cloudy"}`))
			Expect(text(res)).To(Equal("the weather"))

			By("passing numbers as the server wrote them")
			res = callTyped(cs, up.local(toolWeather), map[string]any{"mode": "note", "note": "fine"})
			Expect(res.IsError).To(BeFalse(), text(res))
			Expect(structured(res)).To(MatchJSON(`{"temperature":1e21,"conditions":"fine"}`))

			By("refusing structured content that does not conform, or is missing, as an upstream failure, audited")
			for _, mode := range []string{"invalid", "missing"} {
				res = callTyped(cs, up.local(toolWeather), map[string]any{"mode": mode})
				Expect(res.IsError).To(BeTrue(), mode)
				Expect(res.StructuredContent).To(BeNil(), mode)
				Expect(text(res)).To(Equal(fmt.Sprintf("The call to %s failed (OutputSchemaMismatch); the remote server's answer is not shown.", up.local(toolWeather))), mode)
				recs := auditFor(ns, up.object(toolWeather))
				last := recs[len(recs)-1]
				Expect([]string{last.Outcome, last.ErrorKind}).To(Equal([]string{audit.OutcomeFailed, "OutputSchemaMismatch"}), mode)
			}
			Expect(strings.Join(auditLog.all(), "\n")).NotTo(ContainSubstring("hot"), "nothing of the result is audited")

			By("passing an image byte for byte")
			res = callTyped(cs, up.local(toolPicture), map[string]any{"bytes": 4096})
			Expect(res.IsError).To(BeFalse(), text(res))
			Expect(res.Content).To(HaveLen(2))
			img, ok := res.Content[0].(*sdk.ImageContent)
			Expect(ok).To(BeTrue(), "%T", res.Content[0])
			Expect(img.MIMEType).To(Equal("image/png"))
			Expect(bytes.Equal(img.Data, picture(4096))).To(BeTrue())
			Expect(text(res)).To(Equal("a picture"))

			By("passing embedded resources, audio and a resource link")
			res = callTyped(cs, up.local(toolBundle), nil)
			Expect(res.IsError).To(BeFalse(), text(res))
			Expect(res.Content).To(HaveLen(4))
			doc := res.Content[0].(*sdk.EmbeddedResource).Resource
			Expect([]string{doc.URI, doc.MIMEType, doc.Text}).To(Equal([]string{"file:///notes.txt", "text/plain", "the notes; key: "}))
			blob := res.Content[1].(*sdk.EmbeddedResource).Resource
			Expect(bytes.Equal(blob.Blob, picture(100))).To(BeTrue())
			Expect(bytes.Equal(res.Content[2].(*sdk.AudioContent).Data, picture(50))).To(BeTrue())
			link := res.Content[3].(*sdk.ResourceLink)
			Expect([]string{link.URI, link.Name, link.Description, link.MIMEType}).To(Equal([]string{"https://files.example/report.pdf", "report.pdf", "the report", "application/pdf"}))
			Expect(link.Size).To(Equal(ptr.To(int64(42))))

			By("redacting a credential inside an embedded text resource")
			credential := "gh" + "p_" + fmt.Sprintf("%036x", rand.Uint64())[:36]
			res = callTyped(cs, up.local(toolBundle), map[string]any{"secret": credential})
			Expect(res.IsError).To(BeFalse(), text(res))
			Expect(text(res)).To(HavePrefix("[Note from the gateway: parts of this result other than its text contained Secret:github-token; what the policy redacts is replaced."))
			var notes *sdk.ResourceContents
			for _, c := range res.Content {
				if e, ok := c.(*sdk.EmbeddedResource); ok && e.Resource.Text != "" {
					notes = e.Resource
				}
			}
			Expect(notes).NotTo(BeNil())
			Expect(notes.Text).To(Equal("the notes; key: [redacted github-token]"))
			b, _ := json.Marshal(res)
			Expect(string(b)).NotTo(ContainSubstring(credential))
			recs := auditFor(ns, up.object(toolBundle))
			Expect(recs[len(recs)-1].Inspection).To(Equal([]string{"Secret:github-token"}))

			By("passing a long answer of several parts, written in pieces without its length, byte for byte, its long text screened")
			credential = "gh" + "p_" + fmt.Sprintf("%036x", rand.Uint64())[:36]
			res = callTyped(cs, up.local(toolAlbum), map[string]any{"secret": credential})
			Expect(res.IsError).To(BeFalse(), text(res))
			Expect(res.Content).To(HaveLen(4))
			Expect(bytes.Equal(res.Content[0].(*sdk.ImageContent).Data, picture(400<<10))).To(BeTrue())
			Expect(res.Content[1].(*sdk.TextContent).Text).To(HaveSuffix(albumText("[redacted github-token]")))
			Expect(bytes.Equal(res.Content[2].(*sdk.AudioContent).Data, picture(200<<10))).To(BeTrue())
			Expect(bytes.Equal(res.Content[3].(*sdk.EmbeddedResource).Resource.Blob, picture(150<<10))).To(BeTrue())
			b, _ = json.Marshal(res)
			Expect(string(b)).NotTo(ContainSubstring(credential))

			By("giving an array as structured content only to a client whose revision can carry it")
			res = callTyped(cs, up.local(toolUsers), nil)
			Expect(res.IsError).To(BeFalse(), text(res))
			if agentEra == modernEra {
				Expect(structured(res)).To(MatchJSON(`[{"id":"1"},{"id":"2"}]`))
			} else {
				Expect(res.StructuredContent).To(BeNil())
				Expect(text(res)).To(MatchJSON(`[{"id":"1"},{"id":"2"}]`), "its JSON is given as text instead")
			}

			By("refusing an image above the tool's bound, with a message that says so")
			t := up.tool(toolPicture)
			patch := client.MergeFrom(t.DeepCopy())
			t.Spec.MaxContentBytes = ptr.To(int64(1000))
			Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
			Eventually(func(g Gomega) {
				res := callTyped(cs, up.local(toolPicture), map[string]any{"bytes": 1001})
				g.Expect(res.IsError).To(BeTrue())
				g.Expect(text(res)).To(Equal("The gateway withheld this result: its parts that are not text (images, audio, binary resources) are 1001 bytes, " +
					"above the 1000 bytes this tool allows (McpTool spec.maxContentBytes)."))
			}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
			recs = auditFor(ns, up.object(toolPicture))
			Expect([]string{recs[len(recs)-1].InspectionAction}).To(Equal([]string{"Refuse"}))
			Expect(recs[len(recs)-1].Inspection).To(Equal([]string{"ContentTooLarge"}))
			res = callTyped(cs, up.local(toolPicture), map[string]any{"bytes": 1000})
			Expect(res.IsError).To(BeFalse(), "at the bound, it passes")

			By("passing a 5 MiB image, larger than the client's own cap on an answer, when the tool's bound allows it")
			t = up.tool(toolPicture)
			patch = client.MergeFrom(t.DeepCopy())
			t.Spec.MaxContentBytes = ptr.To(int64(6 << 20))
			Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
			const large = 5 << 20 // 6.7 MiB in base64
			Eventually(func(g Gomega) {
				res := callTyped(cs, up.local(toolPicture), map[string]any{"bytes": large})
				g.Expect(res.IsError).To(BeFalse(), text(res))
				g.Expect(res.Content).To(HaveLen(2))
				g.Expect(bytes.Equal(res.Content[0].(*sdk.ImageContent).Data, picture(large))).To(BeTrue())
			}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
		},
		Entry("agent 2025-11-25, upstream 2026-07-28", legacyEra),
		Entry("agent 2026-07-28, upstream 2026-07-28", modernEra),
		Entry("agent 2025-11-25, upstream 2025-11-25", legacyEra, legacyEra),
		Entry("agent 2026-07-28, upstream 2025-11-25", modernEra, legacyEra),
	)
})

var _ = Describe("Typed results to the TypeScript SDK's client", func() {
	It("receives an image byte for byte, 5 MiB too", func() {
		ns := newNamespace()
		up := declare(ns, "typed", typedUpstream(), []string{toolPicture})
		a := newAgent(ns, "ts-agent")
		a.grant(up.object(toolPicture))
		a.ceiling(mcpv1alpha1.DataClassInternal)
		t := up.tool(toolPicture)
		patch := client.MergeFrom(t.DeepCopy())
		t.Spec.MaxContentBytes = ptr.To(int64(6 << 20))
		Expect(k8sClient.Patch(context.Background(), t, patch)).To(Succeed())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const large = 5 << 20
		Eventually(func(g Gomega) {
			res, err := tsagent.Run(ctx, gatewayURL, a.token, tsagent.Call(up.local(toolPicture), map[string]any{"bytes": 2048}), tsagent.Call(up.local(toolPicture), map[string]any{"bytes": large}))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Steps).To(HaveLen(2))
			for i, n := range []int{2048, large} {
				step := res.Steps[i]
				g.Expect(step.Error).To(BeNil())
				g.Expect(step.IsError).To(BeFalse(), step.Text())
				g.Expect(step.Content).To(HaveLen(2))
				img := step.Content[0]
				g.Expect([]string{img.Type, img.MimeType}).To(Equal([]string{"image", "image/png"}))
				g.Expect(img.Data == base64.StdEncoding.EncodeToString(picture(n))).To(BeTrue(), "the image of %d bytes did not arrive byte for byte", n)
				g.Expect(step.Text()).To(Equal("a picture"))
			}
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})
