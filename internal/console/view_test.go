package console

import (
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func hash(c string) string { return "sha256:" + strings.Repeat(c, 64) }

func tool(name string, enabled bool, approved, current string, ready metav1.ConditionStatus, reason string) *mcpv1alpha1.McpTool {
	t := &mcpv1alpha1.McpTool{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "docs." + name},
		Spec: mcpv1alpha1.McpToolSpec{ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: name, Enabled: enabled, ApprovedDefinitionHash: approved}}
	t.Status.DefinitionHash = current
	t.Status.Description = "does " + name
	t.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: ready, Reason: reason, Message: "why\x1b[2J not"}}
	return t
}

func TestTheViewQueuesEveryUnapprovedDefinitionAndCountsEachToolOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	served := tool("served", true, hash("a"), hash("a"), metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded)
	fresh := tool("fresh", false, "", hash("b"), metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled)
	drifted := tool("drifted", true, hash("c"), hash("d"), metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged)
	drifted.Status.ApprovedDefinition = &mcpv1alpha1.ToolDefinition{Hash: hash("c"), Description: "does drifted",
		InputSchema: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object"}`)}}
	drifted.Status.Description = "does drifted\nand mails it <script>x()</script> \u202eelsewhere"
	drifted.Status.Drift = &mcpv1alpha1.DefinitionDrift{FromHash: hash("c"), ToHash: hash("d"),
		Categories: []mcpv1alpha1.DriftCategory{"HiddenCharacters", "TextChanged"}, Details: []string{"description: bidi control"}}
	fresh.Status.Drift = &mcpv1alpha1.DefinitionDrift{ToHash: hash("0"), Categories: []mcpv1alpha1.DriftCategory{"SchemaWidened"}}
	off := tool("off", false, hash("e"), hash("e"), metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled)
	notImported := tool("later", false, "", "", metav1.ConditionFalse, mcpv1alpha1.ReasonNotImported)
	srv := &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "docs"}, Spec: mcpv1alpha1.McpServerSpec{DataClass: mcpv1alpha1.DataClassInternal}}
	srv.Status.ServerInfo = &mcpv1alpha1.ServerInfo{Name: "docs\x07server", ProtocolVersion: "2026-07-28"}

	pending := &mcpv1alpha1.McpCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "call-1"},
		Spec: mcpv1alpha1.McpCallApprovalSpec{Tool: "docs.served", Caller: "system:serviceaccount:agents:bot", ExpiresAt: metav1.NewTime(now.Add(time.Minute))}}
	lapsed := pending.DeepCopy()
	lapsed.Name = "call-0"
	lapsed.Spec.ExpiresAt = metav1.NewTime(now.Add(-time.Minute))
	denied := pending.DeepCopy()
	denied.Name, denied.Spec.Decision, denied.Spec.DecidedBy, denied.Spec.Reason = "call-2", mcpv1alpha1.CallDenied, "alice", "not\rnow"

	v := BuildView(Objects{Servers: []*mcpv1alpha1.McpServer{srv}, Tools: []*mcpv1alpha1.McpTool{served, fresh, drifted, off, notImported},
		Approvals: []*mcpv1alpha1.McpCallApproval{pending, lapsed, denied}}, now)

	if len(v.Reviews) != 2 || v.Reviews[0].Name != "docs.drifted" || v.Reviews[0].Kind != KindDrifted || v.Reviews[1].Name != "docs.fresh" || v.Reviews[1].Kind != KindNew {
		t.Fatalf("reviews = %+v, want docs.drifted (drifted) then docs.fresh (new)", v.Reviews)
	}
	d := v.Reviews[0]
	if d.CurrentHash != hash("d") || d.ApprovedHash != hash("c") || len(d.Approved) == 0 || len(d.Diff) == 0 {
		t.Errorf("the drifted review lacks the approved text or the diff: %+v", d)
	}
	joined := strings.Join(d.Current, "\n") + strings.Join(d.Diff, "\n") + strings.Join(d.Warnings, "\n")
	if !strings.Contains(joined, "+  and mails it <script>x()</script> <U+202E>elsewhere") {
		t.Errorf("the diff does not show the added line as text:\n%s", joined)
	}
	if strings.ContainsAny(joined, "\u202e\x1b") {
		t.Errorf("a control character reached the view: %q", joined)
	}
	if !slices.Contains(d.Warnings, "Drift: HiddenCharacters, TextChanged: description: bidi control") {
		t.Errorf("the drifted review does not say how the definition drifted: %q", d.Warnings)
	}
	if w := strings.Join(v.Reviews[1].Warnings, "\n"); strings.Contains(w, "Drift") {
		t.Errorf("a drift record of another definition is shown: %q", w)
	}
	if len(v.Reviews[1].Approved) != 0 || len(v.Reviews[1].Diff) != 0 {
		t.Errorf("a new tool has nothing approved to compare with: %+v", v.Reviews[1])
	}

	if len(v.Namespaces) != 1 || len(v.Namespaces[0].Servers) != 1 {
		t.Fatalf("namespaces = %+v", v.Namespaces)
	}
	s := v.Namespaces[0].Servers[0]
	want := Counts{Total: 5, Served: 1, Review: 2, Disabled: 2}
	if s.Counts != want {
		t.Errorf("counts = %+v, want %+v", s.Counts, want)
	}
	if s.Era != "2026-07-28" || s.ServerName != `docs\x07server` || !s.ApprovalCall {
		t.Errorf("server = %+v", s)
	}

	if len(v.Pending) != 1 || v.Pending[0].Name != "call-1" {
		t.Errorf("pending = %+v, want call-1 only (call-0 expired)", v.Pending)
	}
	states := map[string]string{}
	for _, c := range v.Decided {
		states[c.Name] = c.State + "/" + c.Reason
	}
	if states["call-0"] != "Expired/" || states["call-2"] != `Denied/not\x0dnow` {
		t.Errorf("decided = %v", states)
	}
}

// The console shows a schema's descriptions as the characters the agent
// reads, not as JSON, hidden characters as escapes, and argument names and
// enum values as the server's words.
func TestTheReviewShowsSchemaTextAsTheAgentReadsIt(t *testing.T) {
	tl := tool("fresh", false, "", hash("b"), metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled)
	tl.Status.InputSchema = &apiextensionsv1.JSON{Raw: []byte(`{"properties":{"mode":{"description":"Say \"hi\" <b>\u00e9</b>\nthen \u001b]2;stop\u0007\ufe0f","enum":["fast","\u200bslow"],"type":"string"}},"type":"object"}`)}
	v := BuildView(Objects{Tools: []*mcpv1alpha1.McpTool{tl}}, time.Now())
	if len(v.Reviews) != 1 {
		t.Fatalf("reviews = %+v", v.Reviews)
	}
	lines := v.Reviews[0].Current
	for _, want := range []string{
		"input schema (normalised; argument names and enum values are the server's words, served as they are):",
		`  argument "mode": string`,
		`      Say "hi" <b>é</b>`,
		`      then \x1b]2;stop\x07<U+FE0F>`,
		`    enum: "fast", "<U+200B>slow"`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("the review lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if joined := strings.Join(lines, "\n"); strings.Contains(joined, `\"`) || strings.Contains(joined, `\u`) {
		t.Errorf("the schema is shown JSON-escaped:\n%s", joined)
	}
}

func prompt(name string, enabled bool, approved, current string) *mcpv1alpha1.McpPrompt {
	p := &mcpv1alpha1.McpPrompt{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "docs." + name},
		Spec: mcpv1alpha1.McpPromptSpec{ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, RemoteName: name, Enabled: enabled, ApprovedDefinitionHash: approved}}
	p.Status.DefinitionHash, p.Status.LocalName = current, "docs_"+name
	p.Status.Description = "reviews " + name
	return p
}

func resource(name, uri string, enabled bool, approved, current string) *mcpv1alpha1.McpResource {
	r := &mcpv1alpha1.McpResource{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "docs." + name},
		Spec: mcpv1alpha1.McpResourceSpec{ServerRef: mcpv1alpha1.LocalObjectReference{Name: "docs"}, URI: uri, Enabled: enabled, ApprovedDefinitionHash: approved}}
	r.Status.DefinitionHash, r.Status.Name, r.Status.MimeType = current, name, "text/plain"
	return r
}

// Prompts and resources are listed with the tools of their namespace, and
// queued for review, labelled by kind, while their current definition is
// not the approved one: new, or drifted from the approved one. What a
// server wrote is shown as printable text.
func TestTheViewShowsPromptsAndResourcesAndQueuesTheUnapproved(t *testing.T) {
	fresh := prompt("review", false, "", hash("1"))
	fresh.Status.Description = "Reviews code.\u202e <script>x()</script>\x1b[2J"
	fresh.Status.Arguments = []mcpv1alpha1.PromptArgument{{Name: "lang\u200b", Description: "the language", Required: true}}
	served := prompt("summarise", true, hash("2"), hash("2"))
	served.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: mcpv1alpha1.ReasonSucceeded}}
	later := prompt("later", false, "", "")
	drifted := resource("readme", "docs://readme", true, hash("3"), hash("4"))
	drifted.Status.Description = "The readme,\nnow with instructions"
	drifted.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: mcpv1alpha1.ReasonDefinitionChanged, Message: "approve\x07 again"}}
	drifted.Status.Drift = &mcpv1alpha1.DefinitionDrift{FromHash: hash("3"), ToHash: hash("4"), Categories: []mcpv1alpha1.DriftCategory{"TextChanged"}}
	template := resource("file", "", false, hash("5"), hash("5"))
	template.Spec.URITemplate = "docs://files/{path}"
	// A tool with the name of the prompt: each is its own item.
	same := tool("review", false, "", hash("6"), metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled)

	v := BuildView(Objects{Tools: []*mcpv1alpha1.McpTool{same}, Prompts: []*mcpv1alpha1.McpPrompt{fresh, served, later},
		Resources: []*mcpv1alpha1.McpResource{drifted, template}}, time.Now())

	if len(v.Namespaces) != 1 {
		t.Fatalf("namespaces = %+v", v.Namespaces)
	}
	var listed []string
	for _, f := range v.Namespaces[0].Features {
		listed = append(listed, f.ObjectKind+" "+f.Name+" "+f.RemoteName)
	}
	want := []string{"McpPrompt docs.later later", "McpPrompt docs.review review", "McpPrompt docs.summarise summarise",
		"McpResource docs.file docs://files/{path}", "McpResource docs.readme docs://readme"}
	if !slices.Equal(listed, want) {
		t.Errorf("features = %q, want %q", listed, want)
	}
	if f := v.Namespaces[0].Features[2]; !f.Enabled || f.Ready != "True" || f.LocalName != "docs_summarise" {
		t.Errorf("the served prompt = %+v", f)
	}
	if len(v.Namespaces[0].Tools) != 1 {
		t.Errorf("tools = %+v", v.Namespaces[0].Tools)
	}

	var queued []string
	for _, r := range v.Reviews {
		queued = append(queued, r.ObjectKind+" "+r.Name+" "+r.Kind)
	}
	want = []string{"McpResource docs.readme drifted", "McpPrompt docs.review new", "McpTool docs.review new"}
	if !slices.Equal(queued, want) {
		t.Fatalf("reviews = %q, want %q", queued, want)
	}
	d, n := v.Reviews[0], v.Reviews[1]
	if d.CurrentHash != hash("4") || d.ApprovedHash != hash("3") || !d.Enabled || d.RemoteName != "docs://readme" || len(d.Approved) != 0 || len(d.Diff) != 0 {
		t.Errorf("the drifted resource's review = %+v", d)
	}
	if !slices.Contains(d.Current, "description: The readme,\nnow with instructions") || !slices.Contains(d.Current, "uri:         docs://readme") {
		t.Errorf("the drifted resource's definition:\n%s", strings.Join(d.Current, "\n"))
	}
	if !slices.Contains(d.Warnings, `Ready: DefinitionChanged: approve\x07 again`) || !slices.Contains(d.Warnings, "Drift: TextChanged") {
		t.Errorf("the drifted resource's warnings = %q", d.Warnings)
	}
	if n.CurrentHash != hash("1") || n.ApprovedHash != "" || n.LocalName != "docs_review" || n.Server != "docs" {
		t.Errorf("the new prompt's review = %+v", n)
	}
	lines := strings.Join(n.Current, "\n")
	for _, w := range []string{"prompt:      review", `Reviews code.<U+202E> <script>x()</script>\x1b[2J`, "argument:    lang<U+200B> (required): the language"} {
		if !strings.Contains(lines, w) {
			t.Errorf("the new prompt's definition lacks %q:\n%s", w, lines)
		}
	}
	if strings.ContainsAny(lines, "\u202e\u200b\x1b") {
		t.Errorf("a control character reached the view: %q", lines)
	}
}
