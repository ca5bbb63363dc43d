package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/test/capture"
)

// taskUpstream is a server of 2025-11-25 that keeps sessions and makes a
// task of a task-augmented tools/call, in the session it was made in, as
// the TypeScript SDK's in-memory task store does. It answers exactly, so
// that what the gateway sends and passes on is seen to the byte; it
// records every request about a task.
type taskUpstream struct {
	hs *httptest.Server

	mu       sync.Mutex
	next     int
	sessions map[string]bool
	// tasks maps a task id to the session it was made in.
	tasks map[string]string
	// status is what tasks/get says of every task.
	status string
	// seen are the task requests: method, task id, session.
	seen []string
	// meta is the task metadata of the last task-augmented call.
	meta string
	// plain makes no task of any call, as a server without tasks does.
	plain bool
	// lie answers tasks/get with another task than the one asked about.
	lie bool
}

const upstreamTaskSecret = "upstream-status-message-never-passed-on"

func startTaskUpstream(t *testing.T) *taskUpstream {
	t.Helper()
	u := &taskUpstream{sessions: map[string]bool{}, tasks: map[string]string{}, status: "working"}
	u.hs = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.hs.Close)
	return u
}

func (u *taskUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		u.mu.Lock()
		delete(u.sessions, r.Header.Get("Mcp-Session-Id"))
		u.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name   string          `json:"name"`
			Task   json.RawMessage `json:"task"`
			TaskID string          `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	sid := r.Header.Get("Mcp-Session-Id")
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}
	fail := func(code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, req.ID, code, msg)
	}
	if req.Method != "initialize" && !u.sessions[sid] {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	switch req.Method {
	case "initialize":
		u.next++
		sid = fmt.Sprintf("session-%d", u.next)
		u.sessions[sid] = true
		w.Header().Set("Mcp-Session-Id", sid)
		answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"tasks","version":"1"}}`)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/call":
		if req.Params.Task == nil || u.plain {
			answer(`{"content":[{"type":"text","text":"plain"}]}`)
			return
		}
		u.next++
		id := fmt.Sprintf("upstream-task-%d", u.next)
		u.tasks[id] = sid
		u.meta = string(req.Params.Task)
		answer(`{"task":{"taskId":"` + id + `","status":"working","statusMessage":"` + upstreamTaskSecret + `","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":60000,"pollInterval":500}}`)
	case "tasks/get", "tasks/result", "tasks/cancel":
		u.seen = append(u.seen, req.Method+" "+req.Params.TaskID+" "+sid)
		if u.tasks[req.Params.TaskID] != sid {
			fail(-32602, "unknown task")
			return
		}
		status := u.status
		switch req.Method {
		case "tasks/cancel":
			status = "cancelled"
		case "tasks/result":
			answer(`{"content":[{"type":"text","text":"the task's result"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + req.Params.TaskID + `"}}}`)
			return
		}
		id := req.Params.TaskID
		if u.lie {
			id = "upstream-task-999"
		}
		answer(`{"taskId":"` + id + `","status":"` + status + `","statusMessage":"` + upstreamTaskSecret + `","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:01Z","ttl":60000,"pollInterval":500}`)
	default:
		fail(-32601, "method not found")
	}
}

func (u *taskUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

func (u *taskUpstream) set(status string) {
	u.mu.Lock()
	u.status = status
	u.mu.Unlock()
}

// taskAgent posts JSON-RPC requests of 2025-11-25 to a gateway as the
// agent of token.
type taskAgent struct {
	t     *testing.T
	url   string
	token string
}

// rpc posts one request and returns its result, or its error.
func (a taskAgent) rpc(method string, params any) (result, rpcErr map[string]any) {
	a.t.Helper()
	p, _ := json.Marshal(params)
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + string(p) + `}`
	req, _ := http.NewRequestWithContext(a.t.Context(), http.MethodPost, a.url+Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+a.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if i := bytes.Index(b, []byte("data: ")); i >= 0 {
		b = b[i+len("data: "):]
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		a.t.Fatalf("%s: %d %s", method, res.StatusCode, b)
	}
	return msg.Result, msg.Error
}

// call makes a task-augmented call of the echo tool and returns the
// handle the gateway gave, failing the test when it gave none.
func (a taskAgent) call() string {
	a.t.Helper()
	res, e := a.rpc("tools/call", map[string]any{"name": echoLocal, "arguments": map[string]any{"q": "x"}, "task": map[string]any{"ttl": 60000}})
	task, _ := res["task"].(map[string]any)
	handle, _ := task["taskId"].(string)
	if handle == "" {
		a.t.Fatalf("no task: %v %v", res, e)
	}
	return handle
}

const taskAgentUser = "system:serviceaccount:team:agent"

// tasksGateway is a gateway without sessions (the chart's) in front of
// u, with the agent and another agent of the same namespace, both allowed
// the echo tool, signing with key.
func tasksGateway(t *testing.T, u *taskUpstream, log io.Writer, key []byte, rbac allowList, edit func(*Options)) (*Gateway, *httptest.Server) {
	t.Helper()
	var c client.Client
	g, hs := catalogGatewayWith(t, u.hs.URL, nil, rbac, 0, func(o *Options) {
		o.Stateless = true
		o.Audit = audit.NewJSONLines(log)
		o.ApprovalKeys = approvals.StaticKeys{Current: key}
		c, _ = o.Reader.(client.Client)
		o.Authn = tokenTable{
			obsToken:   {Username: taskAgentUser, UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
			otherToken: {Username: "system:serviceaccount:team:other", UID: "u2", Namespace: obsNS, ServiceAccount: "other"},
		}
		if edit != nil {
			edit(o)
		}
	}, &mcpv1alpha1.McpAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: obsNS, Name: "others"},
		Spec:       mcpv1alpha1.McpAccessPolicySpec{ServiceAccounts: []string{"other"}, MaxDataClass: mcpv1alpha1.DataClassInternal},
	})
	tasksClientsMu.Lock()
	tasksClients[g] = c
	tasksClientsMu.Unlock()
	return g, hs
}

// tasksClients are the fake API clients the gateways of these tests read.
var (
	tasksClientsMu sync.Mutex
	tasksClients   = map[*Gateway]client.Client{}
)

var taskKeyForTests = []byte("a task handle key of thirty-two+ bytes, for tests")

// A task-augmented call passes the call's stages and is sent upstream with
// the task metadata; the agent gets a handle, never the upstream's task
// id or session; another replica sharing the keys serves the task's
// requests, in the session the task lives in, with the real id; the
// server's status message is not passed on; tasks/list is not offered;
// the task's end is audited once, without values.
func TestTaskThroughTheGateway(t *testing.T) {
	u := startTaskUpstream(t)
	log := &capture.Buffer{}
	_, one := tasksGateway(t, u, log, taskKeyForTests, allowList{echoObject: true}, nil)
	_, two := tasksGateway(t, u, log, taskKeyForTests, allowList{echoObject: true}, nil)
	agent := taskAgent{t, one.URL, obsToken}

	res, e := agent.rpc("tools/call", map[string]any{"name": echoLocal, "arguments": map[string]any{"q": "x"}, "task": map[string]any{"ttl": 60000}})
	if e != nil {
		t.Fatalf("the call failed: %v", e)
	}
	raw, _ := json.Marshal(res)
	task := res["task"].(map[string]any)
	handle := task["taskId"].(string)
	if !strings.HasPrefix(handle, taskHandlePrefix) || strings.Contains(string(raw), "upstream-task") || strings.Contains(string(raw), "session-") ||
		strings.Contains(string(raw), upstreamTaskSecret) || task["status"] != "working" || task["pollInterval"] != float64(500) {
		t.Fatalf("the agent got %s", raw)
	}
	if u.meta != `{"ttl":60000}` {
		t.Fatalf("the upstream got task metadata %s", u.meta)
	}

	// On the other replica.
	agent.url = two.URL
	got, e := agent.rpc("tasks/get", map[string]any{"taskId": handle})
	if e != nil || got["taskId"] != handle || got["status"] != "working" || got["statusMessage"] != nil {
		t.Fatalf("tasks/get answered %v %v", got, e)
	}
	if seen := u.requests(); len(seen) != 1 || seen[0] != "tasks/get upstream-task-2 session-1" {
		t.Fatalf("the upstream was asked %q", seen)
	}
	if _, e := agent.rpc("tasks/list", map[string]any{}); e == nil || e["code"] != float64(-32601) {
		t.Fatalf("tasks/list answered %v", e)
	}

	u.set("completed")
	agent.url = one.URL
	if got, e := agent.rpc("tasks/get", map[string]any{"taskId": handle}); e != nil || got["status"] != "completed" {
		t.Fatalf("tasks/get answered %v %v", got, e)
	}
	// Seen again: recorded once on the replica that made it.
	if got, e := agent.rpc("tasks/get", map[string]any{"taskId": handle}); e != nil || got["status"] != "completed" {
		t.Fatalf("tasks/get answered %v %v", got, e)
	}
	res, e = agent.rpc("tasks/result", map[string]any{"taskId": handle})
	if e != nil || !strings.Contains(fmt.Sprint(res["content"]), "the task's result") {
		t.Fatalf("tasks/result answered %v %v", res, e)
	}

	records := log.String()
	var callID string
	ended := 0
	for _, line := range strings.Split(strings.TrimSpace(records), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Phase == audit.PhaseAfter && r.Outcome == audit.OutcomeTaskCreated:
			callID = r.CallID
		case r.Phase == audit.PhaseTaskEnded:
			ended++
			if r.CallID != callID || r.Detail != "completed" || r.Tool != echoObject {
				t.Fatalf("the task's end was recorded as %s", line)
			}
		}
	}
	// tasks/get saw it end on the replica that made it, and that replica
	// does not record it again when the result is fetched.
	if callID == "" || ended != 1 {
		t.Fatalf("records:\n%s", records)
	}
	if strings.Contains(records, "upstream-task") || strings.Contains(records, "task's result") || strings.Contains(records, upstreamTaskSecret) {
		t.Fatalf("a record holds a value:\n%s", records)
	}
}

// A handle works only for the caller it was made for, only unaltered,
// and only while the caller may still call the tool of the task and the
// tool's definition is the one the task was made with. Every refusal is
// the same answer as for a task that does not exist, and the upstream is
// not asked.
func TestTaskHandlesRefusedToOthers(t *testing.T) {
	u := startTaskUpstream(t)
	log := &capture.Buffer{}
	rbac := allowList{echoObject: true}
	g, hs := tasksGateway(t, u, log, taskKeyForTests, rbac, nil)
	agent := taskAgent{t, hs.URL, obsToken}
	other := taskAgent{t, hs.URL, otherToken}
	handle := agent.call()

	unknown := func(t *testing.T, who taskAgent, method, h string) {
		t.Helper()
		before := len(u.requests())
		who.t = t
		res, e := who.rpc(method, map[string]any{"taskId": h})
		if e == nil || e["code"] != float64(-32602) || e["message"] != errUnknownTask.Message {
			t.Fatalf("%s answered %v %v", method, res, e)
		}
		if seen := u.requests(); len(seen) != before {
			t.Fatalf("the upstream was asked %q", seen[before:])
		}
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		t.Run("another agent with a stolen handle: "+method, func(t *testing.T) {
			unknown(t, other, method, handle)
		})
	}
	t.Run("an altered handle", func(t *testing.T) {
		b := []byte(handle)
		i := len(taskHandlePrefix) + 20
		b[i] ^= 1
		if b[i] == '.' || b[i] > 'z' {
			b[i] = 'A'
		}
		unknown(t, agent, "tasks/get", string(b))
		unknown(t, agent, "tasks/get", "upstream-task-2")
	})
	t.Run("a handle made with another key", func(t *testing.T) {
		forger := &Gateway{}
		forger.approvalKeys = approvals.StaticKeys{Current: []byte("another key, of thirty-two bytes or more")}
		forged, err := forger.sealTask(t.Context(), taskHandle{Caller: taskAgentUser, Namespace: obsNS, Tool: obsNS + "/" + echoObject, Server: obsNS + "/docs",
			Hash: "sha256:" + strings.Repeat("a", 64), TaskID: "upstream-task-2", Expires: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		unknown(t, agent, "tasks/get", forged)
	})
	t.Run("the caller lost RBAC", func(t *testing.T) {
		rbac[echoObject] = false
		defer func() { rbac[echoObject] = true }()
		unknown(t, agent, "tasks/get", handle)
		unknown(t, agent, "tasks/result", handle)
	})
	t.Run("the tool was disabled", func(t *testing.T) {
		setTool(t, g, func(tl *mcpv1alpha1.McpTool) { tl.Spec.Enabled = false })
		defer setTool(t, g, func(tl *mcpv1alpha1.McpTool) { tl.Spec.Enabled = true })
		unknown(t, agent, "tasks/get", handle)
		unknown(t, agent, "tasks/cancel", handle)
	})
	t.Run("the tool's definition changed and was approved again", func(t *testing.T) {
		changed := "sha256:" + strings.Repeat("b", 64)
		setTool(t, g, func(tl *mcpv1alpha1.McpTool) {
			tl.Spec.ApprovedDefinitionHash, tl.Status.DefinitionHash = changed, changed
		})
		defer setTool(t, g, func(tl *mcpv1alpha1.McpTool) {
			tl.Spec.ApprovedDefinitionHash, tl.Status.DefinitionHash = "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("a", 64)
		})
		unknown(t, agent, "tasks/get", handle)
	})
	// Its own caller still may.
	if got, e := agent.rpc("tasks/get", map[string]any{"taskId": handle}); e != nil || got["status"] != "working" {
		t.Fatalf("tasks/get answered %v %v", got, e)
	}
	if got, e := agent.rpc("tasks/cancel", map[string]any{"taskId": handle}); e != nil || got["status"] != "cancelled" {
		t.Fatalf("tasks/cancel answered %v %v", got, e)
	}
	if !strings.Contains(log.String(), `"detail":"TaskDefinitionChanged"`) {
		t.Fatalf("the refusal of a changed definition was not recorded:\n%s", log.String())
	}
}

// An upstream's answer about a task that is not the task asked about is
// passed on as nothing but an error.
func TestTaskMalformedByTheServer(t *testing.T) {
	u := startTaskUpstream(t)
	_, hs := tasksGateway(t, u, &capture.Buffer{}, taskKeyForTests, allowList{echoObject: true}, nil)
	agent := taskAgent{t, hs.URL, obsToken}
	handle := agent.call()
	u.mu.Lock()
	u.lie = true
	u.mu.Unlock()
	res, e := agent.rpc("tasks/get", map[string]any{"taskId": handle})
	if res != nil || e == nil || e["message"] != errMalformedTask.Message {
		t.Fatalf("tasks/get answered %v %v", res, e)
	}
}

// setTool changes the echo McpTool as the gateway's cache holds it.
func setTool(t *testing.T, g *Gateway, edit func(*mcpv1alpha1.McpTool)) {
	t.Helper()
	tasksClientsMu.Lock()
	c := tasksClients[g]
	tasksClientsMu.Unlock()
	var tl mcpv1alpha1.McpTool
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: obsNS, Name: echoObject}, &tl); err != nil {
		t.Fatal(err)
	}
	edit(&tl)
	if err := c.Update(t.Context(), &tl); err != nil {
		t.Fatal(err)
	}
	// The fake keeps status with the object unless told it is a
	// subresource.
	_ = c.Status().Update(t.Context(), &tl)
}

// An identity has at most MaxTasksPerIdentity tasks open on a replica:
// beyond it a task-augmented call is refused before anything is sent,
// with its own error, while other identities are served; a task seen to
// end gives its place back.
func TestTasksBoundedPerIdentity(t *testing.T) {
	u := startTaskUpstream(t)
	log := &capture.Buffer{}
	_, hs := tasksGateway(t, u, log, taskKeyForTests, allowList{echoObject: true}, func(o *Options) { o.MaxTasksPerIdentity = 2 })
	agent := taskAgent{t, hs.URL, obsToken}
	first := agent.call()
	agent.call()
	calls := func() int {
		u.mu.Lock()
		defer u.mu.Unlock()
		return len(u.tasks)
	}
	made := calls()
	res, e := agent.rpc("tools/call", map[string]any{"name": echoLocal, "arguments": map[string]any{}, "task": map[string]any{}})
	if e == nil || e["code"] != float64(-32029) || !strings.Contains(fmt.Sprint(e["data"]), audit.RefusedTasksLimited) {
		t.Fatalf("the third task was answered %v %v", res, e)
	}
	if calls() != made {
		t.Fatal("the refused call was sent upstream")
	}
	if !strings.Contains(log.String(), `"reason":"TasksLimited"`) {
		t.Fatalf("the refusal was not recorded:\n%s", log.String())
	}
	taskAgent{t, hs.URL, otherToken}.call()

	if got, e := agent.rpc("tasks/cancel", map[string]any{"taskId": first}); e != nil || got["status"] != "cancelled" {
		t.Fatalf("tasks/cancel answered %v %v", got, e)
	}
	agent.call()
}

// A task-augmented call is decided as any call: a tool RBAC does not let
// the caller call gets the uniform answer, and nothing is sent.
func TestTaskCallDecidedAsACall(t *testing.T) {
	u := startTaskUpstream(t)
	_, hs := tasksGateway(t, u, &capture.Buffer{}, taskKeyForTests, allowList{echoObject: true}, nil)
	res, e := taskAgent{t, hs.URL, obsToken}.rpc("tools/call", map[string]any{"name": secretLocal, "arguments": map[string]any{}, "task": map[string]any{"ttl": 1000}})
	if e != nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), unknownTool) || res["task"] != nil {
		t.Fatalf("the call was answered %v %v", res, e)
	}
	if len(u.tasks) != 0 {
		t.Fatal("the refused call was sent upstream")
	}
	// Task metadata other than a ttl is refused.
	_, e = taskAgent{t, hs.URL, obsToken}.rpc("tools/call", map[string]any{"name": echoLocal, "task": map[string]any{"ttl": 1000, "x": 1}})
	if e == nil || e["code"] != float64(-32602) {
		t.Fatalf("task metadata with more than a ttl was answered %v", e)
	}
}

// A server that speaks 2026-07-28 is not sent the task metadata of the
// initialize era: the call fails TasksUnsupported, and the server is not
// called.
func TestTaskCallToAModernServerFails(t *testing.T) {
	up := startRoundsUpstream(t)
	_, hs := catalogGatewayWith(t, up.hs.URL, nil, allowList{echoObject: true}, 0, func(o *Options) { o.Stateless = true })
	res, e := taskAgent{t, hs.URL, obsToken}.rpc("tools/call", map[string]any{"name": echoLocal, "arguments": map[string]any{}, "task": map[string]any{"ttl": 1000}})
	if e != nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "TasksUnsupported") {
		t.Fatalf("the call was answered %v %v", res, e)
	}
	if answers, _ := up.calls(); len(answers) != 0 {
		t.Fatalf("the server was called %d times", len(answers))
	}
}

// A server that makes no task of a task-augmented call answers it as a
// call: the agent gets that answer, as the call's, and holds no task.
func TestTaskIgnoredByTheServer(t *testing.T) {
	u := startTaskUpstream(t)
	u.plain = true
	_, hs := tasksGateway(t, u, &capture.Buffer{}, taskKeyForTests, allowList{echoObject: true}, func(o *Options) { o.MaxTasksPerIdentity = 1 })
	for range 3 {
		res, e := taskAgent{t, hs.URL, obsToken}.rpc("tools/call", map[string]any{"name": echoLocal, "arguments": map[string]any{}, "task": map[string]any{"ttl": 1000}})
		if e != nil || res["task"] != nil || res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "plain") {
			t.Fatalf("the call was answered %v %v", res, e)
		}
	}
}

// What a task handle costs: sealed once per task, opened at every request
// about it.
func BenchmarkTaskHandle(b *testing.B) {
	g := &Gateway{}
	g.approvalKeys = approvals.StaticKeys{Current: taskKeyForTests}
	id := &authn.Identity{Username: taskAgentUser, Namespace: obsNS}
	h := taskHandle{Caller: taskAgentUser, Namespace: obsNS, Tool: obsNS + "/" + echoObject, Server: obsNS + "/docs",
		Hash: "sha256:" + strings.Repeat("a", 64), Arguments: "sha256:" + strings.Repeat("b", 64), CallID: "5ba8d3872247f06ea5d995f8",
		TaskID: "786512e2-9e0d-44bd-8f29-789f320fe840", Session: mcp.TaskSession{Session: "1868a90c-5f1d-4b8a-9d6f-6b1d5b0e7a77", Version: "2025-11-25"}, Expires: 1 << 40}
	sealed, err := g.sealTask(b.Context(), h)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			if _, err := g.sealTask(b.Context(), h); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(sealed)), "handle-bytes")
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			if _, ok := g.openTask(b.Context(), id, sealed); !ok {
				b.Fatal("not opened")
			}
		}
	})
}
