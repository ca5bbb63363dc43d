package gateway

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// Tasks (2025-11-25, experimental there; docs/adr/066-tasks-through-the-gateway.md).
// An agent that adds task metadata (params.task) to a tools/call has the
// call made as a task: the call passes every stage a call passes
// (callThrough), is sent upstream with the task metadata, and the
// upstream's CreateTaskResult comes back with its taskId replaced by a
// handle the gateway seals: the caller, the McpTool (and the
// McpSharedServer it was offered through), the server, the definition
// hash approved when the task was made, the upstream's task id and the
// session it lives in, encrypted and authenticated under a key derived
// from the approval keys every replica shares. Any replica opens it, so
// there is no table of tasks to share; no one else can read it or make
// one. tasks/get, tasks/result and tasks/cancel open the handle, refuse
// one sealed for another caller exactly as an unknown one, decide the
// tool again as a call is decided (RBAC, the data-class ceiling, the tool
// still servable and its definition the one approved when the task was
// made), and only then ask the upstream, in the task's session, with the
// real task id. tasks/list is not offered: the upstream sees one client,
// the gateway, for every caller, and its list is everyone's.

// DefaultMaxTasksPerIdentity bounds the tasks one identity (a
// ServiceAccount, or a person in a namespace) may have open on one
// replica: made here and not yet seen to end here.
const DefaultMaxTasksPerIdentity = 32

// maxTaskLifetime bounds a handle's life when the upstream gives its
// task no ttl, or a longer one.
const maxTaskLifetime = 24 * time.Hour

// taskHandlePrefix marks the gateway's task handles.
const taskHandlePrefix = "gwtask."

// taskKeyDomain derives the handles' encryption key from an approval
// key, apart from the keys' other uses.
const taskKeyDomain = "mcp-catalog task handle key\x00"

// taskHandle is what a sealed handle says.
type taskHandle struct {
	Caller    string          `json:"c"`
	Namespace string          `json:"n"`
	Tool      string          `json:"t"`
	Via       string          `json:"v,omitempty"`
	Server    string          `json:"s"`
	Hash      string          `json:"h"`
	Arguments string          `json:"a"`
	CallID    string          `json:"k"`
	TaskID    string          `json:"i"`
	Session   mcp.TaskSession `json:"u"`
	Expires   int64           `json:"e"`
	// Set for a task waiting for a person's approval (approvaltask.go):
	// the McpCallApproval (namespace/name), the name the agent called and
	// the arguments it called with, which the call is made with once
	// approved; TaskID and Session are then empty.
	Approval string          `json:"p,omitempty"`
	Name     string          `json:"l,omitempty"`
	Args     json.RawMessage `json:"r,omitempty"`
}

// errUnknownTask answers every request naming a task the caller may not
// use now: not a handle, altered, another caller's, expired, or of a tool
// the caller may no longer call. One answer for all, so that nothing
// tells them apart.
var errUnknownTask = &jsonError{Code: -32602, Message: "there is no task of this id that the caller may use"}

// errMalformedTask answers a request whose upstream answered with a task
// that is not one (no id, another id, an unknown status, members of the
// wrong type): nothing of it is passed on.
var errMalformedTask = &jsonError{Code: -32603, Message: "the task's server answered with a malformed task"}

type jsonError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *jsonError) encode() []byte {
	b, _ := json.Marshal(e)
	return b
}

func taskCipher(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(approvals.MAC(key, []byte(taskKeyDomain)))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealTask encrypts h under the current approval key.
func (g *Gateway) sealTask(ctx context.Context, h taskHandle) (string, error) {
	ks, err := g.approvalKeys.Keys(ctx, false)
	if err != nil {
		return "", err
	}
	if len(ks.Current) == 0 {
		return "", errors.New("no approval signing key")
	}
	aead, err := taskCipher(ks.Current)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := aead.Seal(nonce, nonce, plain, []byte(taskKeyDomain))
	return taskHandlePrefix + base64.RawURLEncoding.EncodeToString(sealed), nil
}

// openTask opens a handle sealed under the current or previous approval
// key and checks that it is the caller's and not expired.
func (g *Gateway) openTask(ctx context.Context, id *authn.Identity, handle string) (taskHandle, bool) {
	var h taskHandle
	enc, ok := strings.CutPrefix(handle, taskHandlePrefix)
	if !ok || len(handle) > 8<<10 {
		return h, false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return h, false
	}
	for _, fresh := range []bool{false, true} {
		ks, err := g.approvalKeys.Keys(ctx, fresh)
		if err != nil {
			return h, false
		}
		for _, k := range [][]byte{ks.Current, ks.Previous} {
			if len(k) == 0 {
				continue
			}
			aead, err := taskCipher(k)
			if err != nil || len(sealed) < aead.NonceSize() {
				continue
			}
			plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(taskKeyDomain))
			if err != nil {
				continue
			}
			if json.Unmarshal(plain, &h) != nil {
				return h, false
			}
			if h.Caller != id.Username || h.Namespace != id.Namespace || g.now().Unix() > h.Expires {
				return h, false
			}
			return h, true
		}
	}
	return h, false
}

// openTasks counts, per identity, the tasks made on this replica that
// it has not seen end, to bound them; and the tasks it saw end through
// tasks/get, whose end is recorded already.
type openTasks struct {
	mu    sync.Mutex
	open  map[string]map[string]time.Time
	ended map[string]map[string]time.Time
}

func identityKey(id *authn.Identity) string { return id.Namespace + "/" + id.Username }

// take reserves a place for a task of id, under callID, unless id holds
// max already.
func (o *openTasks) take(id *authn.Identity, callID string, max int, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open == nil {
		o.open, o.ended = map[string]map[string]time.Time{}, map[string]map[string]time.Time{}
	}
	k := identityKey(id)
	for _, m := range []map[string]map[string]time.Time{o.open, o.ended} {
		for c, exp := range m[k] {
			if now.After(exp) {
				delete(m[k], c)
			}
		}
	}
	held := o.open[k]
	if len(held) >= max {
		return false
	}
	if held == nil {
		held = map[string]time.Time{}
		o.open[k] = held
	}
	held[callID] = now.Add(maxTaskLifetime)
	return true
}

// rename gives the place reserved under from to the task of the call
// to, until exp.
func (o *openTasks) rename(id *authn.Identity, from, to string, exp time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if held := o.open[identityKey(id)]; held != nil {
		delete(held, from)
		held[to] = exp
	}
}

// give gives back a place reserved for a task no call made.
func (o *openTasks) give(id *authn.Identity, callID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.open[identityKey(id)], callID)
}

// sawEnd marks the task of callID ended, as tasks/get saw it; it reports
// whether its end is to be recorded: the task was made here and its end
// not seen before.
func (o *openTasks) sawEnd(id *authn.Identity, callID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := identityKey(id)
	exp, ok := o.open[k][callID]
	if !ok {
		return false
	}
	delete(o.open[k], callID)
	if o.ended[k] == nil {
		o.ended[k] = map[string]time.Time{}
	}
	o.ended[k][callID] = exp
	return true
}

// finish forgets the task of callID, whose result was fetched or which
// was cancelled; it reports whether its end is to be recorded: unless
// this replica recorded it already.
func (o *openTasks) finish(id *authn.Identity, callID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := identityKey(id)
	if _, ok := o.ended[k][callID]; ok {
		delete(o.ended[k], callID)
		return false
	}
	delete(o.open[k], callID)
	return true
}

func (g *Gateway) maxTasks() int {
	if g.MaxTasksPerIdentity > 0 {
		return g.MaxTasksPerIdentity
	}
	return DefaultMaxTasksPerIdentity
}

type taskKey struct{}

// taskCall is a task-augmented call as the stages see it: the task
// metadata the send stage sends, and what the record stage learnt of the
// task the upstream made.
type taskCall struct {
	meta json.RawMessage
	// Set by taskCreated, or, for a call that waits for a person's
	// approval as a task, by holdForApproval (waiting).
	created *mcp.CallOutcome
	handle  taskHandle
	waiting *waitingApproval
}

func taskOf(ctx context.Context) *taskCall {
	t, _ := ctx.Value(taskKey{}).(*taskCall)
	return t
}

// taskOption is the send stage's client option for a task-augmented call;
// nil for any other. A call sent with the caller's own credential (a
// per-person server, a token exchanged for the person's) is not made a
// task: the task's later requests carry no such credential, and the task
// would be left where no one can reach it.
func taskOption(ctx context.Context, c *callScope) (mcp.CallOption, error) {
	t := taskOf(ctx)
	if t == nil {
		return nil, nil
	}
	if c.personCred != nil || !c.callerToken.IsZero() {
		return nil, &mcp.Error{Kind: mcp.KindTasksUnsupported, Method: "tools/call", Detail: "a call made with the caller's own credential is not made a task"}
	}
	return mcp.WithTask(t.meta), nil
}

// taskCreated is the record stage's answer to an upstream that made a
// task: the after record says so, and the call's answer is written by
// serveTaskCall from what is kept here.
func (g *Gateway) taskCreated(ctx context.Context, c *callScope, out *mcp.CallOutcome) *sdk.CallToolResult {
	c.rec.Outcome = audit.OutcomeTaskCreated
	c.obs.end(audit.OutcomeTaskCreated, "")
	if err := g.Audit.Write(context.WithoutCancel(ctx), c.rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit outcome record could not be written", "tool", c.key.String(), "callID", c.rec.CallID)
		metrics.GatewayAuditFailures.WithLabelValues(audit.PhaseAfter).Inc()
	}
	if t := taskOf(ctx); t != nil && c.tool != nil && c.srv != nil {
		t.created = out
		t.handle = taskHandle{
			Caller: c.rec.Caller, Namespace: c.rec.Namespace, Tool: c.key.String(), Via: c.via,
			Server: c.srv.Namespace + "/" + c.srv.Name, Hash: c.tool.Status.DefinitionHash,
			Arguments: c.rec.ArgumentsHash, CallID: c.rec.CallID, Session: *out.Task,
		}
	}
	return &sdk.CallToolResult{}
}

// taskCallParams reads the params of a task-augmented tools/call: the
// tool's name, its arguments, and the task metadata (an object); ok is
// false when there is no task metadata (not a task), bad when the params
// cannot be read.
func taskCallParams(raw json.RawMessage) (name string, args, task json.RawMessage, ok, bad bool) {
	params, err := mcp.ObjectMembers(raw)
	if err != nil || params["task"] == nil {
		return "", nil, nil, false, false
	}
	for k := range params {
		if k != "name" && k != "arguments" && k != "task" && k != "_meta" {
			return "", nil, nil, true, true
		}
	}
	if json.Unmarshal(params["name"], &name) != nil || !toolname.ValidLocalName(name) {
		return "", nil, nil, true, true
	}
	t, err := mcp.ObjectMembers(params["task"])
	if err != nil || t == nil {
		return "", nil, nil, true, true
	}
	for k, v := range t {
		var ttl float64
		if k != "ttl" || json.Unmarshal(v, &ttl) != nil || ttl < 0 {
			// Only a ttl is task metadata; nothing else of the agent's
			// goes upstream.
			return "", nil, nil, true, true
		}
	}
	return name, params["arguments"], params["task"], true, false
}

// serveTasks answers what the front door reads of tasks: a
// task-augmented tools/call and the requests about tasks; it reports
// whether it did.
func (g *Gateway) serveTasks(w http.ResponseWriter, r *http.Request, m *message, info *auth.TokenInfo, id *authn.Identity) bool {
	var served bool
	switch m.method {
	case "tools/call":
		served = g.serveTaskCall(w, r, m, info, id)
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
		served = g.serveTaskRequest(w, r, m, info, id)
	}
	if served {
		g.eraAnswers.Add(1)
	}
	return served
}

// serveTaskCall answers a task-augmented tools/call of the initialize
// era; it reports whether it did (false: the call asks for no task).
func (g *Gateway) serveTaskCall(w http.ResponseWriter, r *http.Request, m *message, info *auth.TokenInfo, id *authn.Identity) bool {
	if m.notification() || m.params == nil || !bytes.Contains(m.params, []byte(`"task"`)) {
		// Read no further: most calls ask for no task.
		return false
	}
	name, args, meta, ok, bad := taskCallParams(m.params)
	if !ok {
		return false
	}
	if bad {
		writeResponse(w, m.id, (&jsonError{Code: -32602, Message: "a task-augmented tools/call names a tool, its arguments and task metadata holding only a ttl"}).encode(), false)
		return true
	}
	ctx := r.Context()
	reserve := audit.NewCallID()
	if !g.tasks.take(id, reserve, g.maxTasks(), g.now()) {
		g.refuseTaskBound(ctx, w, m, id, name)
		return true
	}
	defer func() {
		// A reservation no task took is given back.
		g.tasks.give(id, reserve)
	}()
	req := &sdk.CallToolRequest{
		Params: &sdk.CallToolParamsRaw{Name: name, Arguments: args},
		Extra:  &sdk.RequestExtra{TokenInfo: info, Header: r.Header},
	}
	pre, err := g.decideVisible(ctx, id, name)
	refused := pre == nil
	if err != nil {
		if !errors.Is(err, ErrOwnerNotServed) {
			// Answered as the call path answers a call it could not
			// decide: try again.
			msg, ok := eraCallResult(undecided(ctx, err), nil)
			writeResponse(w, m.id, msg, ok)
			return true
		}
		refused = true
	}
	t := &taskCall{meta: meta}
	res, err := g.callThrough(context.WithValue(ctx, taskKey{}, t), req, pre, refused)
	if t.waiting != nil && err == nil {
		g.answerApprovalTask(ctx, w, m, id, reserve, t)
		return true
	}
	if err != nil || t.created == nil {
		msg, ok := eraCallResult(resultForEra(res, m.era), err)
		g.budgets.Charge(id, writeResponse(w, m.id, msg, ok))
		return true
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	_ = json.Unmarshal(t.created.Result, &created)
	task, ttl, err := passTask(created.Task, "")
	if err != nil {
		writeResponse(w, m.id, errMalformedTask.encode(), false)
		return true
	}
	life := maxTaskLifetime
	if ttl > 0 && ttl < life {
		life = ttl
	}
	t.handle.TaskID = task.taskID
	t.handle.Expires = g.now().Add(life).Unix()
	handle, err := g.sealTask(ctx, t.handle)
	if err != nil {
		writeResponse(w, m.id, (&jsonError{Code: -32603, Message: "the task could not be handed to the caller (no approval signing key)"}).encode(), false)
		return true
	}
	// The place reserved is the task's now, under its call's id.
	g.tasks.rename(id, reserve, t.handle.CallID, g.now().Add(life))
	body, _ := json.Marshal(map[string]any{"task": task.with(handle)})
	g.budgets.Charge(id, writeResponse(w, m.id, body, true))
	return true
}

// refuseTaskBound answers a task-augmented call of an identity that has
// as many tasks open on this replica as it may: audited, counted, and
// nothing decided or sent.
func (g *Gateway) refuseTaskBound(ctx context.Context, w http.ResponseWriter, m *message, id *authn.Identity, name string) {
	rec := audit.Record{CallID: audit.NewCallID(), Caller: id.Username, Namespace: id.Namespace, LocalName: name,
		Phase: audit.PhaseDenied, Decision: "Denied", Reason: audit.RefusedTasksLimited, Time: g.now()}
	g.writeDenial(ctx, rec)
	metrics.GatewayRefusals.WithLabelValues(audit.RefusedTasksLimited).Inc()
	writeResponse(w, m.id, (&jsonError{Code: -32029, Message: fmt.Sprintf(
		"the caller has %d tasks open at this gateway replica, as many as it may; wait for one to end (tasks/get, tasks/result) or cancel one", g.maxTasks()),
		Data: map[string]any{"reason": audit.RefusedTasksLimited}}).encode(), false)
}

// passedTask is an upstream's task as passed on: its known members only,
// each of its type. The status message is the server's text, which
// nothing screens, and is left out, as a call's progress message is.
type passedTask struct {
	taskID        string
	status        string
	createdAt     string
	lastUpdatedAt string
	ttl           json.RawMessage
	pollInterval  json.RawMessage
}

func (t passedTask) with(handle string) map[string]any {
	out := map[string]any{"taskId": handle, "status": t.status}
	if t.createdAt != "" {
		out["createdAt"] = t.createdAt
	}
	if t.lastUpdatedAt != "" {
		out["lastUpdatedAt"] = t.lastUpdatedAt
	}
	if t.ttl != nil {
		out["ttl"] = t.ttl
	}
	if t.pollInterval != nil {
		out["pollInterval"] = t.pollInterval
	}
	return out
}

// terminal reports whether the task's status is one it does not leave.
func (t passedTask) terminal() bool {
	return t.status == "completed" || t.status == "failed" || t.status == "cancelled"
}

var errTaskMalformed = &mcp.Error{Kind: mcp.KindInvalidResponse, Method: "tasks", Detail: "the server's task is malformed"}

// passTask reads an upstream's Task object (want: its id, when known)
// and its ttl.
func passTask(raw json.RawMessage, want string) (passedTask, time.Duration, error) {
	var t passedTask
	m, err := mcp.ObjectMembers(raw)
	if err != nil || m == nil {
		return t, 0, errTaskMalformed
	}
	if json.Unmarshal(m["taskId"], &t.taskID) != nil || t.taskID == "" || (want != "" && t.taskID != want) {
		return t, 0, errTaskMalformed
	}
	switch _ = json.Unmarshal(m["status"], &t.status); t.status {
	case "working", "input_required", "completed", "failed", "cancelled":
	default:
		return t, 0, errTaskMalformed
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"createdAt", &t.createdAt}, {"lastUpdatedAt", &t.lastUpdatedAt}} {
		if v := m[f.name]; v != nil && json.Unmarshal(v, f.to) != nil {
			return t, 0, errTaskMalformed
		}
		if _, err := time.Parse(time.RFC3339Nano, *f.to); *f.to != "" && err != nil {
			return t, 0, errTaskMalformed
		}
	}
	var ttl time.Duration
	if v := m["ttl"]; v != nil {
		var ms *float64
		if json.Unmarshal(v, &ms) != nil || (ms != nil && *ms < 0) {
			return t, 0, errTaskMalformed
		}
		t.ttl = json.RawMessage("null")
		if ms != nil {
			ttl = time.Duration(*ms) * time.Millisecond
			t.ttl, _ = json.Marshal(int64(*ms))
		}
	}
	if v := m["pollInterval"]; v != nil {
		var ms float64
		if json.Unmarshal(v, &ms) != nil || ms < 0 {
			return t, 0, errTaskMalformed
		}
		t.pollInterval, _ = json.Marshal(int64(ms))
	}
	return t, ttl, nil
}

// serveTaskRequest answers tasks/get, tasks/result, tasks/cancel and
// tasks/list of the initialize era.
func (g *Gateway) serveTaskRequest(w http.ResponseWriter, r *http.Request, m *message, info *auth.TokenInfo, id *authn.Identity) bool {
	if m.notification() {
		return false
	}
	if m.method == "tasks/list" {
		// The upstream's list is of every caller's tasks: not passed on.
		writeResponse(w, m.id, (&jsonError{Code: -32601, Message: "tasks/list is not offered by the gateway: a task is known by the handle its call returned"}).encode(), false)
		return true
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	params, err := mcp.ObjectMembers(m.params)
	if err != nil || params["taskId"] == nil || json.Unmarshal(params["taskId"], &p.TaskID) != nil {
		writeResponse(w, m.id, (&jsonError{Code: -32602, Message: "a task request names the task by taskId"}).encode(), false)
		return true
	}
	ctx := r.Context()
	h, ok := g.openTask(ctx, id, p.TaskID)
	if !ok {
		writeResponse(w, m.id, errUnknownTask.encode(), false)
		return true
	}
	c, ep, ok := g.decideTask(ctx, id, m, h)
	if !ok {
		writeResponse(w, m.id, errUnknownTask.encode(), false)
		return true
	}
	if h.Approval != "" {
		g.serveApprovalTask(w, r, m, info, id, c, h, p.TaskID)
		return true
	}
	if m.method == "tasks/result" {
		msg, ok := g.taskResult(ctx, id, c, ep, h, m.era)
		g.budgets.Charge(id, writeResponse(w, m.id, msg, ok))
		return true
	}
	raw, err := g.MCP.TaskRequest(ctx, ep, h.Session, m.method, h.TaskID, m.method == "tasks/cancel")
	c.obs.sent = true
	if err != nil {
		c.obs.end(audit.OutcomeFailed, string(failureKind(err)))
		g.endCall(c.obs, nil)
		writeResponse(w, m.id, (&jsonError{Code: -32603, Message: fmt.Sprintf("the task's server could not be asked (%s)", failureKind(err))}).encode(), false)
		return true
	}
	task, _, err := passTask(raw, h.TaskID)
	if err != nil {
		// tasks/cancel answers the task; tasks/get answers it too.
		c.obs.end(audit.OutcomeFailed, string(mcp.KindInvalidResponse))
		g.endCall(c.obs, nil)
		writeResponse(w, m.id, errMalformedTask.encode(), false)
		return true
	}
	c.obs.end(audit.OutcomeSucceeded, "")
	g.endCall(c.obs, nil)
	// The end of a task is recorded where it is seen: by tasks/get on
	// the replica that made it, else where its result is fetched or it is
	// cancelled; once per replica.
	if record := (m.method == "tasks/cancel" && g.tasks.finish(id, h.CallID)) ||
		(m.method == "tasks/get" && task.terminal() && g.tasks.sawEnd(id, h.CallID)); record {
		g.taskEnded(ctx, c, h, task.status, "")
	}
	body, _ := json.Marshal(task.with(p.TaskID))
	g.budgets.Charge(id, writeResponse(w, m.id, body, true))
	return true
}

// decideTask decides the tool of a task again, as a call of it is
// decided (refusals audited), and checks that the tool's definition and
// server are those the task was made with; then the endpoint to ask.
func (g *Gateway) decideTask(ctx context.Context, id *authn.Identity, m *message, h taskHandle) (*callScope, mcp.Endpoint, bool) {
	ns, name, _ := strings.Cut(h.Tool, "/")
	req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: m.method}, Extra: &sdk.RequestExtra{}}
	ctx, obs := g.startCall(ctx, req)
	c, answer := g.identify(ctx, req, id, toolRef{key: types.NamespacedName{Namespace: ns, Name: name}, via: h.Via})
	if answer == nil {
		answer = g.decide(ctx, id, c)
	}
	if answer != nil {
		g.endCall(obs, nil)
		return nil, mcp.Endpoint{}, false
	}
	c.rec.CallID, c.rec.ArgumentsHash = h.CallID, h.Arguments
	srv := c.decidedServer
	if c.tool.Status.DefinitionHash != h.Hash || srv == nil || srv.Namespace+"/"+srv.Name != h.Server {
		g.deny(ctx, c.rec, c.tool, audit.DenyNotServable, audit.DetailTaskDefinitionChanged,
			"the tool's definition or server changed since the task was made")
		g.endCall(obs, nil)
		return nil, mcp.Endpoint{}, false
	}
	c.srv = srv
	if h.Approval != "" {
		// Nothing is asked upstream of a task waiting for a person; its
		// call, once approved, finds its own way (callThrough).
		return c, mcp.Endpoint{}, true
	}
	ep, err := g.upstreamFor(ctx, id, c)
	if err != nil {
		c.obs.end(audit.OutcomeFailed, string(failureKind(err)))
		g.endCall(obs, nil)
		return nil, mcp.Endpoint{}, false
	}
	return c, ep, true
}

// taskResult fetches a task's result and passes it on as a call's result
// is passed on (result.go: the tool's result bounds, output schema and
// inspection), with one record of how the task ended.
func (g *Gateway) taskResult(ctx context.Context, id *authn.Identity, c *callScope, ep mcp.Endpoint, h taskHandle, era string) ([]byte, bool) {
	opts := []mcp.CallOption{mcp.WithInteraction(g.interactionFor(ctx, c))}
	if bound := maxContentFor(c); bound > 0 {
		opts = append(opts, mcp.WithMaxBodyBytes(mcp.MaxBodyBytes+(bound+2)/3*4))
	}
	out, err := g.MCP.TaskResult(ctx, ep, h.Session, h.TaskID, opts...)
	c.obs.sent = true
	var typed *typedResult
	if err == nil {
		typed, err = typedOf(out)
		if err == nil {
			err = checkStructured(outputSchemaOf(c.tool), typed, out.IsError)
		}
	}
	var res *sdk.CallToolResult
	status := "completed"
	switch {
	case err != nil:
		kind := failureKind(err)
		c.obs.end(audit.OutcomeFailed, string(kind))
		g.endCall(c.obs, nil)
		var me *mcp.Error
		if errors.As(err, &me) && me.RPCCode != 0 {
			// The server refused (an unknown or failed task): no result.
			return (&jsonError{Code: -32603, Message: fmt.Sprintf("the task's server gave no result (%s)", kind)}).encode(), false
		}
		if g.tasks.finish(id, h.CallID) {
			g.taskEnded(ctx, c, h, "failed", string(kind))
		}
		res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("The task of %s failed (%s); the remote server's answer is not shown.", c.offer().localName(), kind)}}}
	case out.IsError:
		c.obs.end(audit.OutcomeToolError, "")
		g.endCall(c.obs, nil)
		status = "failed"
		res = g.readable(ctx, id, c, out.Text, typed, true)
	default:
		c.obs.end(audit.OutcomeSucceeded, "")
		g.endCall(c.obs, nil)
		res = g.readable(ctx, id, c, out.Text, typed, false)
	}
	if err == nil && g.tasks.finish(id, h.CallID) {
		g.taskEnded(ctx, c, h, status, "")
	}
	return eraCallResult(resultForEra(res, era), nil)
}

// taskEnded writes the one record of a task's end: its call's id, the
// status it ended in, no values.
func (g *Gateway) taskEnded(ctx context.Context, c *callScope, h taskHandle, status, kind string) {
	rec := c.rec
	rec.CallID, rec.ArgumentsHash = h.CallID, h.Arguments
	rec.Phase, rec.Time, rec.Outcome, rec.ErrorKind, rec.Detail = audit.PhaseTaskEnded, g.now(), audit.OutcomeTaskEnded, kind, status
	rec.Decision, rec.Reason, rec.LatencyMillis = "", "", 0
	if err := g.Audit.Write(context.WithoutCancel(ctx), rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of a task's end could not be written", "tool", c.key.String(), "callID", h.CallID)
		metrics.GatewayAuditFailures.WithLabelValues(audit.PhaseTaskEnded).Inc()
	}
}
