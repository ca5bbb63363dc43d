package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/test/mcpserver"
	"github.com/mcp-catalog/operator/test/tsagent"
)

// everythingResearch is the reference server's tool that runs only as a
// task (execution.taskSupport "required"), registered with the
// TypeScript SDK's experimental tasks API.
const everythingResearch = "simulate-research-query"

// taskRPC posts one JSON-RPC request of 2025-11-25 to the gateway as the
// agent of token, and returns its result or error.
func taskRPC(token, method string, params any) (result, rpcErr map[string]any) {
	GinkgoHelper()
	p, err := json.Marshal(params)
	Expect(err).NotTo(HaveOccurred())
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + string(p) + `}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, gatewayURL, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	if i := bytes.Index(b, []byte("data: ")); i >= 0 {
		b = b[i+len("data: "):]
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	Expect(json.Unmarshal(b, &msg)).To(Succeed(), string(b))
	return msg.Result, msg.Error
}

var _ = Describe("Tasks through the gateway", func() {
	It("tells the official TypeScript SDK's client which tools take tasks, and it runs one as a task", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		ref := declare(ns, "everything", srv.URL, []string{everythingResearch, tsagent.EverythingEcho})
		bot := newAgent(ns, "bot").allowInternal()
		topic := "declared-tasks"

		// The SDK asks for a task only of a server that declares tasks
		// for tools/call, and of a tool listed as taking them; it refuses
		// to call a tool listed as requiring one plainly.
		res, err := tsagent.Run(ctx, gatewayURL, bot.token,
			tsagent.List(),
			tsagent.TaskCall(ref.local(everythingResearch), map[string]any{"topic": topic}),
			tsagent.TaskCall(ref.local(tsagent.EverythingEcho), map[string]any{"message": topic}),
			tsagent.Call(ref.local(everythingResearch), map[string]any{"topic": topic}),
		)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Connect.Error).To(BeNil())
		Expect(res.Connect.ProtocolVersion).To(Equal("2025-11-25"))
		Expect(res.Steps).To(HaveLen(4))

		By("the list says the research tool requires a task, and nothing of the echo")
		Expect(res.Steps[0].Error).To(BeNil())
		Expect(res.Steps[0].TaskSupport).To(Equal(map[string]string{ref.local(everythingResearch): "required"}))

		By("the research tool runs as a task: the agent holds the gateway's handle, polls it to its end and fetches the result")
		run := res.Steps[1]
		Expect(run.Error).To(BeNil())
		Expect(run.Task).NotTo(BeNil())
		Expect(run.Task.TaskID).To(HavePrefix("gwtask."))
		Expect(run.Task.Statuses).NotTo(BeEmpty())
		Expect(run.Task.Statuses[len(run.Task.Statuses)-1]).To(Equal("completed"))
		Expect(run.IsError).To(BeFalse())
		Expect(run.Text()).To(ContainSubstring("Research Report: " + topic))

		By("a tool that takes no task is called plainly")
		plain := res.Steps[2]
		Expect(plain.Error).To(BeNil())
		Expect(plain.Task).NotTo(BeNil())
		Expect(plain.Task.TaskID).To(BeEmpty())
		Expect(plain.Text()).To(Equal("Echo: " + topic))

		By("the SDK refuses to call the task-only tool plainly, as the list told it")
		Expect(res.Steps[3].Error).NotTo(BeNil())
		Expect(res.Steps[3].Error.Message).To(ContainSubstring("requires task-based execution"))
	})

	It("offers a wait for a person's approval as a task, and makes the call once, when its result is fetched after a person approved", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ns := newNamespace()
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8sClient.DeleteAllOf(ctx, &mcpv1alpha1.McpCallApproval{}, client.InNamespace(ns))).To(Succeed())
		})
		docs := newUpstream(ns, "docs", mcpserver.Options{}, []string{echo}, withApproval())
		bot := newAgent(ns, "bot").allowInternal()
		spy := newAgent(ns, "spy").allowInternal()
		alice := as("alice", "system:authenticated")
		mayApprove(ns, alice)
		arg := "made-once-approved"

		By("the official TypeScript SDK's client sees the tool take tasks, and calls it as one")
		agent, err := tsagent.Start(ctx, gatewayURL, bot.token, tsagent.Options{},
			tsagent.List(), tsagent.TaskCall(docs.local(echo), map[string]any{"text": arg}))
		Expect(err).NotTo(HaveOccurred())

		By("the call waits as a task: an McpCallApproval, and nothing sent upstream")
		var a mcpv1alpha1.McpCallApproval
		Eventually(func(g Gomega) {
			list := approvalsOf(ns)
			g.Expect(list).To(HaveLen(1))
			a = list[0]
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(a.Spec.Decision).To(Equal(mcpv1alpha1.CallPending))
		Expect(docs.Calls(echo)).To(BeZero())

		By("a person approves; the agent's poll sees it, it fetches the result, and the call is made once")
		Expect(alice.decide(ns, a.Name, mcpv1alpha1.CallApproved, "alice", "")).To(Succeed())
		res, err := agent.Wait()
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Steps).To(HaveLen(2))
		Expect(res.Steps[0].TaskSupport).To(Equal(map[string]string{docs.local(echo): "optional"}))
		run := res.Steps[1]
		Expect(run.Error).To(BeNil())
		Expect(run.Task).NotTo(BeNil())
		handle := run.Task.TaskID
		Expect(handle).To(HavePrefix("gwtask."))
		Expect(handle).NotTo(ContainSubstring(arg))
		Expect(run.Task.Statuses[0]).To(Equal("working"))
		Expect(run.Task.Statuses[len(run.Task.Statuses)-1]).To(Equal("completed"))
		Expect(run.IsError).To(BeFalse(), run.Text())
		Expect(run.Text()).To(Equal(arg))
		Expect(docs.Calls(echo)).To(Equal(1))
		used := &mcpv1alpha1.McpCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&a), used)).To(Succeed())
		Expect(used.Status.ConsumedAt).NotTo(BeNil())
		recs := auditFor(ns, docs.object(echo))
		var before *audit.Record
		for i := range recs {
			if recs[i].Phase == audit.PhaseBefore {
				before = &recs[i]
			}
		}
		Expect(before).NotTo(BeNil())
		Expect([]string{before.Approval, before.ApprovalName, before.ApprovedBy}).To(Equal([]string{"Approved", a.Name, "alice"}))

		By("the result fetched again makes no second call, and another agent cannot use the handle")
		got, e := taskRPC(bot.token, "tasks/result", map[string]any{"taskId": handle})
		Expect(e).To(BeNil())
		Expect(got["isError"]).To(BeTrue())
		Expect(docs.Calls(echo)).To(Equal(1))
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			_, e := taskRPC(spy.token, method, map[string]any{"taskId": handle})
			Expect(e).NotTo(BeNil(), method)
			Expect(e["code"]).To(BeEquivalentTo(-32602), method)
		}

		By("cancelled while it waits: the approval is withdrawn, and nothing is sent")
		created, e := taskRPC(bot.token, "tools/call", map[string]any{"name": docs.local(echo), "arguments": map[string]any{"text": "cancel me"}, "task": map[string]any{}})
		Expect(e).To(BeNil())
		task, _ := created["task"].(map[string]any)
		Expect(task).NotTo(BeNil(), "%v", created)
		Expect(task["status"]).To(Equal("working"))
		Expect(task["statusMessage"]).To(ContainSubstring("kubectl mcp approve-call"))
		cancelHandle, _ := task["taskId"].(string)
		Expect(approvalsOf(ns)).To(HaveLen(2))
		got, e = taskRPC(bot.token, "tasks/cancel", map[string]any{"taskId": cancelHandle})
		Expect(e).To(BeNil())
		Expect(got["status"]).To(Equal("cancelled"))
		Expect(approvalsOf(ns)).To(HaveLen(1))
		got, e = taskRPC(bot.token, "tasks/get", map[string]any{"taskId": cancelHandle})
		Expect(e).To(BeNil())
		Expect(got["status"]).To(Equal("failed"))
		Expect(docs.Calls(echo)).To(Equal(1))

		By("denied: the task fails with the person's reason, and nothing is sent")
		created, e = taskRPC(bot.token, "tools/call", map[string]any{"name": docs.local(echo), "arguments": map[string]any{"text": "deny me"}, "task": map[string]any{"ttl": 60000}})
		Expect(e).To(BeNil())
		task, _ = created["task"].(map[string]any)
		deniedHandle, _ := task["taskId"].(string)
		var pending *mcpv1alpha1.McpCallApproval
		for _, x := range approvalsOf(ns) {
			if x.Status.ConsumedAt == nil {
				pending = &x
			}
		}
		Expect(pending).NotTo(BeNil())
		Expect(alice.decide(ns, pending.Name, mcpv1alpha1.CallDenied, "alice", "not during the freeze")).To(Succeed())
		got, e = taskRPC(bot.token, "tasks/get", map[string]any{"taskId": deniedHandle})
		Expect(e).To(BeNil())
		Expect(got["status"]).To(Equal("failed"))
		Expect(got["statusMessage"]).To(ContainSubstring("not during the freeze"))
		got, e = taskRPC(bot.token, "tasks/result", map[string]any{"taskId": deniedHandle})
		Expect(e).To(BeNil())
		Expect(got["isError"]).To(BeTrue())
		Expect(docs.Calls(echo)).To(Equal(1))

		By("arguments too large to carry in a handle: the call waits the usual way, not as a task")
		big, e := taskRPC(bot.token, "tools/call", map[string]any{"name": docs.local(echo), "arguments": map[string]any{"text": strings.Repeat("<", 1024)}, "task": map[string]any{}})
		Expect(e).To(BeNil())
		Expect(big).NotTo(HaveKey("task"))
		Expect(big["isError"]).To(BeTrue())
		raw, _ := json.Marshal(big["content"])
		Expect(string(raw)).To(ContainSubstring("waits for a person's approval"))
		Expect(docs.Calls(echo)).To(Equal(1))
	})

	It("runs the reference server's task-only tool as a task of the calling agent, which no other agent can see", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		srv := startEverything(ctx)

		ns := newNamespace()
		ref := declare(ns, "everything", srv.URL, []string{everythingResearch})
		bot := newAgent(ns, "bot").allowInternal()
		spy := newAgent(ns, "spy").allowInternal()
		topic := "tasks-through-the-gateway"

		By("the import keeps the tool's taskSupport beside its definition")
		Expect(ref.tool(everythingResearch).Status.TaskSupport).To(Equal("required"))

		By("the call made as a task: the agent gets the gateway's handle")
		res, e := taskRPC(bot.token, "tools/call", map[string]any{
			"name": ref.local(everythingResearch), "arguments": map[string]any{"topic": topic}, "task": map[string]any{"ttl": 60000},
		})
		Expect(e).To(BeNil())
		task, _ := res["task"].(map[string]any)
		Expect(task).NotTo(BeNil(), "%v", res)
		handle, _ := task["taskId"].(string)
		Expect(handle).To(HavePrefix("gwtask."))
		Expect(task["status"]).To(Equal("working"))
		Expect(task).NotTo(HaveKey("statusMessage"))

		By("another agent of the namespace, allowed the same tool, cannot use the handle")
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			_, e := taskRPC(spy.token, method, map[string]any{"taskId": handle})
			Expect(e).NotTo(BeNil(), method)
			Expect(e["code"]).To(BeEquivalentTo(-32602), method)
		}

		By("the agent polls its task to its end and fetches the result")
		Eventually(func(g Gomega) {
			got, e := taskRPC(bot.token, "tasks/get", map[string]any{"taskId": handle})
			g.Expect(e).To(BeNil())
			g.Expect(got["taskId"]).To(Equal(handle))
			g.Expect(got["status"]).To(Equal("completed"))
		}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
		res, e = taskRPC(bot.token, "tasks/result", map[string]any{"taskId": handle})
		Expect(e).To(BeNil())
		raw, _ := json.Marshal(res["content"])
		Expect(string(raw)).To(ContainSubstring("Research Report: " + topic))

		By("the task's end is audited under the call's id, without values")
		var created, ended bool
		for _, line := range auditLog.all() {
			if !strings.Contains(line, ref.object(everythingResearch)) {
				continue
			}
			var r audit.Record
			Expect(json.Unmarshal([]byte(line), &r)).To(Succeed())
			created = created || r.Outcome == audit.OutcomeTaskCreated
			ended = ended || (r.Phase == audit.PhaseTaskEnded && r.Detail == "completed")
			Expect(line).NotTo(ContainSubstring(topic))
		}
		Expect(created).To(BeTrue())
		Expect(ended).To(BeTrue())
	})
})
