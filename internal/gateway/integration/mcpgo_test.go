package integration_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// mcp-go (github.com/mark3labs/mcp-go), a client written apart from the
// go-sdk and the TypeScript SDK, as the calling agent: it speaks 2026-07-28
// (server/discover, then stateless requests) or, pinned to an earlier
// revision, the initialize era with a session.

// connectMCPGo opens an mcp-go client to the gateway as the agent of
// token, in the protocol revision era, and checks it settled on it.
func connectMCPGo(token, era string, opts ...mcpgoclient.ClientOption) *mcpgoclient.Client {
	GinkgoHelper()
	cl, err := mcpgoclient.NewStreamableHttpClient(gatewayURL, transport.WithHTTPBasicClient(httpClient(token)))
	Expect(err).NotTo(HaveOccurred())
	// NewStreamableHttpClient takes transport options only; the client's
	// own options go on a client built around its transport.
	cl = mcpgoclient.NewClient(cl.GetTransport(), append([]mcpgoclient.ClientOption{mcpgoclient.WithProtocolVersion(era)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	Expect(cl.Start(ctx)).To(Succeed())
	DeferCleanup(cl.Close)
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-go-agent", Version: "1"}
	res, err := cl.Initialize(ctx, init)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.ProtocolVersion).To(Equal(era))
	Expect(cl.ProtocolVersion()).To(Equal(era))
	return cl
}

// mcpgoTools lists the tools the mcp-go client is offered, by name.
func mcpgoTools(cl *mcpgoclient.Client) map[string]mcpgo.Tool {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	lr, err := cl.ListTools(ctx, mcpgo.ListToolsRequest{})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]mcpgo.Tool{}
	for _, t := range lr.Tools {
		out[t.Name] = t
	}
	return out
}

// mcpgoCall calls a tool with the mcp-go client.
func mcpgoCall(cl *mcpgoclient.Client, name string, args map[string]any, meta *mcpgo.Meta) (*mcpgo.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments, req.Params.Meta = name, args, meta
	return cl.CallTool(ctx, req)
}

// mcpgoText is the text of a result's text parts.
func mcpgoText(content []mcpgo.Content) string {
	var b strings.Builder
	for _, c := range content {
		if t, ok := mcpgo.AsTextContent(c); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// progressSeen is a notifications/progress an mcp-go client received.
type progressSeen struct {
	Token    any     `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
}

// formAnswer is the mcp-go elicitation handler of a person who fills in
// the form with content, and counts what it was asked.
type formAnswer struct {
	content map[string]any

	mu       sync.Mutex
	messages []string
	fields   [][]string
}

func (f *formAnswer) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.messages = append(f.messages, req.Params.Message)
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	b, _ := json.Marshal(req.Params.RequestedSchema)
	_ = json.Unmarshal(b, &schema)
	var names []string
	for n := range schema.Properties {
		names = append(names, n)
	}
	f.fields = append(f.fields, names)
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept, Content: f.content}}, nil
}

func (f *formAnswer) asked() ([]string, [][]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.messages...), append([][]string(nil), f.fields...)
}

// sampler is an mcp-go sampling handler that counts what it was asked.
type sampler struct {
	mu    sync.Mutex
	asked int
}

func (s *sampler) CreateMessage(context.Context, mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	return &mcpgo.CreateMessageResult{SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent("sampled")}, Model: "m"}, nil
}

func (s *sampler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// roundsUpstream starts a go-sdk server of 2026-07-28 whose greet tool
// answers a first call with input_required, asking for a name in a form
// under a state of its own, and a call that brings the name back under
// that state with a greeting. It reports the states its calls brought.
func roundsUpstream() (url string, states func() []string) {
	GinkgoHelper()
	const own = "the-servers-own-state"
	var mu sync.Mutex
	var seen []string
	srv := sdk.NewServer(&sdk.Implementation{Name: "rounds", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "greet", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		mu.Lock()
		seen = append(seen, req.Params.RequestState)
		mu.Unlock()
		name, ok := req.Params.InputResponses["who"].(*sdk.ElicitResult)
		if !ok || req.Params.RequestState != own || name.Action != "accept" {
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"who": &sdk.ElicitParams{
					Mode: "form", Message: "Who is asking?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}},
				}},
				RequestState: own,
			}, nil
		}
		who, _ := name.Content["name"].(string)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + who}}}, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	DeferCleanup(hs.Close)
	return hs.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

var _ = Describe("The mcp-go client as the calling agent", func() {
	It("calls the reference server's tools in both eras it speaks, typed results as the server answers them, and is sent the progress of its call", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		remotes := []string{tsagent.EverythingEcho, tsagent.EverythingStructuredContent, tsagent.EverythingTinyImage, tsagent.EverythingLongRunning}
		ref := declare(ns, "everything", srv.URL, remotes)
		bot := newAgent(ns, "bot").allowInternal()

		By("what the server answers directly")
		direct := directSession(ctx, srv.URL)
		wantWeather := callTyped(direct, tsagent.EverythingStructuredContent, map[string]any{"location": "Chicago"})
		Expect(wantWeather.StructuredContent).NotTo(BeNil())
		wantPNG := imageOf(callTyped(direct, tsagent.EverythingTinyImage, map[string]any{}))
		Expect(direct.Close()).To(Succeed())

		var locals []string
		for _, r := range remotes {
			locals = append(locals, ref.local(r))
		}
		arg := "mcp-go-through-the-gateway"
		for _, era := range []string{modernEra, legacyEra} {
			By("mcp-go in " + era)
			var mu sync.Mutex
			var progress []progressSeen
			cl := connectMCPGo(bot.token, era)
			if era == legacyEra {
				Expect(cl.GetSessionId()).NotTo(BeEmpty(), "the suite's gateway keeps sessions in the initialize era")
			} else {
				Expect(cl.GetSessionId()).To(BeEmpty(), "2026-07-28 is stateless")
			}
			cl.OnNotification(func(n mcpgo.JSONRPCNotification) {
				if n.Method != "notifications/progress" {
					return
				}
				b, err := json.Marshal(n.Params)
				Expect(err).NotTo(HaveOccurred())
				var p progressSeen
				Expect(json.Unmarshal(b, &p)).To(Succeed())
				mu.Lock()
				progress = append(progress, p)
				mu.Unlock()
			})

			var names []string
			for n := range mcpgoTools(cl) {
				names = append(names, n)
			}
			Expect(names).To(ConsistOf(locals), era)

			res, err := mcpgoCall(cl, ref.local(tsagent.EverythingEcho), map[string]any{"message": arg}, nil)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			Expect(mcpgoText(res.Content)).To(Equal("Echo: "+arg), era)

			res, err = mcpgoCall(cl, ref.local(tsagent.EverythingStructuredContent), map[string]any{"location": "Chicago"}, nil)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			got, err := json.Marshal(res.StructuredContent)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(MatchJSON(structured(wantWeather)), era)

			res, err = mcpgoCall(cl, ref.local(tsagent.EverythingTinyImage), nil, nil)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			var images []*mcpgo.ImageContent
			for _, c := range res.Content {
				if img, ok := mcpgo.AsImageContent(c); ok {
					images = append(images, img)
				}
			}
			Expect(images).To(HaveLen(1), era)
			Expect(images[0].MIMEType).To(Equal("image/png"), era)
			png, err := base64.StdEncoding.DecodeString(images[0].Data)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(png).To(Equal(wantPNG.Data), era)

			By("the progress of a long call, under the token mcp-go sent, in " + era)
			token := "mcp-go-" + era
			res, err = mcpgoCall(cl, ref.local(tsagent.EverythingLongRunning), map[string]any{"duration": 0.3, "steps": 3}, &mcpgo.Meta{ProgressToken: token})
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			// mcp-go hands a stream's notifications over before its
			// response, so all are here when the call returns.
			mu.Lock()
			Expect(progress).To(HaveLen(3), era)
			for i, p := range progress {
				Expect(p).To(Equal(progressSeen{Token: token, Progress: float64(i + 1), Total: 3}), era)
			}
			mu.Unlock()
			Expect(cl.Close()).To(Succeed())
		}

		By("every call audited as sent and answered")
		recs := auditFor(ns, ref.object(tsagent.EverythingEcho))
		Expect(phases(recs)).To(Equal([]string{audit.PhaseBefore, audit.PhaseAfter, audit.PhaseBefore, audit.PhaseAfter}))
	})

	It("reads the go-sdk upstream's typed results whole in both eras: structured content, an image, embedded resources, audio and a resource link", func() {
		ns := newNamespace()
		up := declare(ns, "typed", typedUpstream(), []string{toolWeather, toolPicture, toolBundle, toolUsers})
		bot := newAgent(ns, "bot").allowInternal()
		for _, era := range []string{modernEra, legacyEra} {
			By("mcp-go in " + era)
			cl := connectMCPGo(bot.token, era)
			tools := mcpgoTools(cl)
			Expect(tools).To(HaveKey(up.local(toolWeather)), era)
			schema, err := json.Marshal(tools[up.local(toolWeather)].OutputSchema)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(schema)).To(MatchJSON(weatherSchema), era)

			res, err := mcpgoCall(cl, up.local(toolWeather), nil, nil)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			sc, err := json.Marshal(res.StructuredContent)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(sc)).To(MatchJSON(`{"temperature":22.5,"conditions":"Partly cloudy"}`), era)

			res, err = mcpgoCall(cl, up.local(toolPicture), map[string]any{"bytes": 4096}, nil)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.Content).To(HaveLen(2), era)
			img, ok := mcpgo.AsImageContent(res.Content[0])
			Expect(ok).To(BeTrue(), "%s: %T", era, res.Content[0])
			Expect(img.MIMEType).To(Equal("image/png"), era)
			Expect(base64.StdEncoding.DecodeString(img.Data)).To(Equal(picture(4096)), era)
			Expect(mcpgoText(res.Content)).To(Equal("a picture"), era)

			res, err = mcpgoCall(cl, up.local(toolBundle), nil, nil)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			Expect(res.Content).To(HaveLen(4), era)
			doc, ok := mcpgo.AsEmbeddedResource(res.Content[0])
			Expect(ok).To(BeTrue(), "%s: %T", era, res.Content[0])
			notes, ok := mcpgo.AsTextResourceContents(doc.Resource)
			Expect(ok).To(BeTrue(), "%s: %T", era, doc.Resource)
			Expect([]string{notes.URI, notes.MIMEType, notes.Text}).To(Equal([]string{"file:///notes.txt", "text/plain", "the notes; key: "}), era)
			bin, ok := mcpgo.AsEmbeddedResource(res.Content[1])
			Expect(ok).To(BeTrue(), "%s: %T", era, res.Content[1])
			blob, ok := mcpgo.AsBlobResourceContents(bin.Resource)
			Expect(ok).To(BeTrue(), "%s: %T", era, bin.Resource)
			Expect(base64.StdEncoding.DecodeString(blob.Blob)).To(Equal(picture(100)), era)
			audio, ok := mcpgo.AsAudioContent(res.Content[2])
			Expect(ok).To(BeTrue(), "%s: %T", era, res.Content[2])
			Expect(base64.StdEncoding.DecodeString(audio.Data)).To(Equal(picture(50)), era)
			link, ok := res.Content[3].(mcpgo.ResourceLink)
			Expect(ok).To(BeTrue(), "%s: %T", era, res.Content[3])
			Expect([]string{link.URI, link.Name, link.Description, link.MIMEType}).To(Equal([]string{"https://files.example/report.pdf", "report.pdf", "the report", "application/pdf"}), era)
			Expect(link.Size).To(HaveValue(BeEquivalentTo(42)), era)

			By("an array as structured content only in the revision that can carry it, in " + era)
			res, err = mcpgoCall(cl, up.local(toolUsers), nil, nil)
			Expect(err).NotTo(HaveOccurred(), era)
			Expect(res.IsError).To(BeFalse(), era)
			if era == modernEra {
				sc, err = json.Marshal(res.StructuredContent)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(sc)).To(MatchJSON(`[{"id":"1"},{"id":"2"}]`))
			} else {
				Expect(res.StructuredContent).To(BeNil())
				Expect(mcpgoText(res.Content)).To(MatchJSON(`[{"id":"1"},{"id":"2"}]`))
			}
			Expect(cl.Close()).To(Succeed())
		}
	})

	It("is asked the reference server's form in its session and as a round, and a 2026-07-28 server's input round in both eras, and its answers reach the servers", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		ref := declare(ns, "everything", srv.URL, []string{"trigger-elicitation-request", "trigger-sampling-request"})
		roundsURL, states := roundsUpstream()
		rounds := declare(ns, "rounds", roundsURL, []string{"greet"})
		bot := newAgent(ns, "bot").allowInternal()
		person := "Ada Lovelace"

		By("2025-11-25: the server's elicitation is relayed in mcp-go's session, and the server's result reports the answer")
		form := &formAnswer{content: map[string]any{"name": person, "check": true}}
		model := &sampler{}
		cl := connectMCPGo(bot.token, legacyEra, mcpgoclient.WithElicitationHandler(form), mcpgoclient.WithSamplingHandler(model))
		res, err := mcpgoCall(cl, ref.local("trigger-elicitation-request"), nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), mcpgoText(res.Content))
		Expect(mcpgoText(res.Content)).To(ContainSubstring(person))
		messages, fields := form.asked()
		Expect(messages).To(HaveLen(1))
		Expect(fields[0]).To(ContainElements("name", "check"))

		By("2025-11-25: the server's sampling request is refused without asking mcp-go (the tool's default policy)")
		res, err = mcpgoCall(cl, ref.local("trigger-sampling-request"), map[string]any{"prompt": "hello"}, nil)
		if err == nil {
			Expect(mcpgoText(res.Content)).NotTo(ContainSubstring("sampled"))
		}
		Expect(model.count()).To(BeZero())

		By("2025-11-25 against a 2026-07-28 server: the gateway asks mcp-go the server's round in its session, and calls the server again with the answer under the server's own state")
		res, err = mcpgoCall(cl, rounds.local("greet"), nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), mcpgoText(res.Content))
		Expect(mcpgoText(res.Content)).To(Equal("Hello, " + person))
		messages, fields = form.asked()
		Expect(messages).To(HaveLen(2))
		Expect(messages[1]).To(Equal("Who is asking?"))
		Expect(fields[1]).To(Equal([]string{"name"}))
		Expect(states()).To(Equal([]string{"", "the-servers-own-state"}))
		Expect(cl.Close()).To(Succeed())

		By("2026-07-28 against the initialize-era server: its request on the call's stream reaches mcp-go as a round while the server's call waits on the gateway, and the server's result reports the answer")
		modern := &formAnswer{content: map[string]any{"name": person, "check": true}}
		cl = connectMCPGo(bot.token, modernEra, mcpgoclient.WithElicitationHandler(modern))
		res, err = mcpgoCall(cl, ref.local("trigger-elicitation-request"), nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), mcpgoText(res.Content))
		Expect(mcpgoText(res.Content)).To(ContainSubstring(person))
		messages, fields = modern.asked()
		Expect(messages).To(HaveLen(1))
		Expect(fields[0]).To(ContainElements("name", "check"))

		By("2026-07-28 against a 2026-07-28 server: mcp-go answers the round the gateway passes on, under the gateway's state, and the server gets the answer under its own")
		res, err = mcpgoCall(cl, rounds.local("greet"), nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), mcpgoText(res.Content))
		Expect(mcpgoText(res.Content)).To(Equal("Hello, " + person))
		messages, fields = modern.asked()
		Expect(messages[1:]).To(Equal([]string{"Who is asking?"}))
		Expect(fields[1]).To(Equal([]string{"name"}))
		Expect(states()).To(Equal([]string{"", "the-servers-own-state", "", "the-servers-own-state"}))

		By("each request audited, relayed or refused and why, without what was asked or answered")
		decisions := func(object string) []string {
			var out []string
			for _, r := range auditFor(ns, object) {
				if r.Phase == audit.PhaseInteraction {
					out = append(out, r.Interaction+"/"+r.Decision+"/"+r.Reason)
				}
			}
			return out
		}
		// Relayed in both eras: each relay is recorded before the agent
		// is asked and again with what it answered.
		Expect(decisions(ref.object("trigger-elicitation-request"))).To(HaveEach(audit.InteractionElicitation + "/" + audit.DecisionRelayed + "/"))
		Expect(decisions(ref.object("trigger-elicitation-request"))).To(HaveLen(4))
		Expect(decisions(ref.object("trigger-sampling-request"))).To(ContainElement(audit.InteractionSampling + "/" + audit.DecisionRefused + "/" + audit.RefusedSamplingNotAllowed))
		Expect(decisions(rounds.object("greet"))).To(ContainElement(audit.InteractionElicitation + "/" + audit.DecisionRelayed + "/"))
		for _, line := range auditLog.all() {
			if strings.Contains(line, `"namespace":"`+ns+`"`) {
				Expect(line).NotTo(ContainSubstring(person))
				Expect(line).NotTo(ContainSubstring("Who is asking"))
				Expect(line).NotTo(ContainSubstring("the-servers-own-state"))
			}
		}
	})

	It("sees which tools take tasks in 2025-11-25 and runs the reference server's task-only tool as a task through the gateway", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		ref := declare(ns, "everything", srv.URL, []string{everythingResearch, tsagent.EverythingEcho})
		bot := newAgent(ns, "bot").allowInternal()
		topic := "mcp-go-tasks"

		cl := connectMCPGo(bot.token, legacyEra)
		By("the gateway declares tasks for tools/call, and lists the research tool as requiring one")
		caps := cl.GetServerCapabilities()
		Expect(caps.Tasks).NotTo(BeNil())
		Expect(caps.Tasks.Requests).NotTo(BeNil())
		Expect(caps.Tasks.Requests.Tools).NotTo(BeNil())
		Expect(caps.Tasks.Requests.Tools.Call).NotTo(BeNil())
		Expect(caps.Tasks.Cancel).NotTo(BeNil())
		Expect(caps.Tasks.List).To(BeNil(), "tasks/list is not served")
		tools := mcpgoTools(cl)
		Expect(tools).To(HaveKey(ref.local(everythingResearch)))
		Expect(tools[ref.local(everythingResearch)].Execution).NotTo(BeNil())
		Expect(tools[ref.local(everythingResearch)].Execution.TaskSupport).To(Equal(mcpgo.TaskSupportRequired))
		Expect(tools[ref.local(tsagent.EverythingEcho)].Execution).To(BeNil())

		By("mcp-go's CallTool cannot take the task the gateway creates: it reads every tools/call answer as a tool result")
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments, req.Params.Task = ref.local(everythingResearch), map[string]any{"topic": topic}, &mcpgo.TaskParams{}
		_, err := cl.CallTool(ctx, req)
		Expect(err).To(MatchError(ContainSubstring("content is missing")))

		By("the task made on mcp-go's own transport, in its session; mcp-go waits for it with its task methods and fetches the result")
		ttl := int64(60000)
		resp, err := cl.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
			JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(int64(1000)), Method: string(mcpgo.MethodToolsCall),
			Params: mcpgo.CallToolParams{Name: ref.local(everythingResearch), Arguments: map[string]any{"topic": topic}, Task: &mcpgo.TaskParams{TTL: &ttl}},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Error).To(BeNil())
		var created mcpgo.CreateTaskResult
		Expect(json.Unmarshal(resp.Result, &created)).To(Succeed())
		handle := created.Task.TaskId
		Expect(handle).To(HavePrefix("gwtask."))
		Expect(created.Task.Status).To(Equal(mcpgo.TaskStatusWorking))

		waitCtx, cancelWait := context.WithTimeout(ctx, 30*time.Second)
		defer cancelWait()
		done, err := cl.WaitForTask(waitCtx, mcpgo.GetTaskRequest{Params: mcpgo.GetTaskParams{TaskId: handle}}, 250*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		Expect(done.TaskId).To(Equal(handle))
		Expect(done.Status).To(Equal(mcpgo.TaskStatusCompleted))
		out, err := cl.TaskResult(ctx, mcpgo.TaskResultRequest{Params: mcpgo.TaskResultParams{TaskId: handle}})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.IsError).To(BeFalse())
		Expect(mcpgoText(out.Content)).To(ContainSubstring("Research Report: " + topic))

		By("a tool that takes no task is called plainly")
		res, err := mcpgoCall(cl, ref.local(tsagent.EverythingEcho), map[string]any{"message": topic}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(mcpgoText(res.Content)).To(Equal("Echo: " + topic))
	})
})
