package gateway

import (
	"bytes"
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the gateway tells agents of tasks (docs/adr/066-tasks-through-the-gateway.md).
// A client that follows the 2025-11-25 revision makes a tools/call a task
// only when the server declares the tasks capability for it, and a tool
// only when the tool's execution.taskSupport allows it; without both, the
// official TypeScript SDK's client refuses to ask for a task, and calls a
// tool that requires one plainly, which its server refuses. The go-sdk's
// types carry neither, so the gateway writes both into what the SDK
// encodes, here, in every path that answers initialize or tools/list.

// tasksProtocol is the one revision of the initialize era that has tasks.
const tasksProtocol = "2025-11-25"

// tasksCapability is the tasks capability the gateway declares: a
// tools/call may be made a task, and a task cancelled. tasks/list is not
// served (it would list every caller's tasks), so it is not declared.
const tasksCapability = `"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}`

// taskSupportShown reports whether a tool's status.taskSupport is one an
// agent is told of: a tool that may or must run as a task. "forbidden" is
// the default, and is left unsaid.
func taskSupportShown(s string) bool { return s == "optional" || s == "required" }

// listedTaskSupport is the taskSupport agents read of o: its server's,
// when it takes tasks; "optional" for a tool whose calls wait for a
// person, which the gateway runs as a task of its own while they wait
// (approvaltask.go); else none.
func (o toolOffer) listedTaskSupport() string {
	if s := o.tool.Status.TaskSupport; taskSupportShown(s) {
		return s
	}
	if o.waitsAsTask {
		return "optional"
	}
	return ""
}

// executionMember is the member a tool's encoding ends with when it takes
// tasks; support is one taskSupportShown allows, so nothing is escaped.
func executionMember(support string) string {
	return `,"execution":{"taskSupport":"` + support + `"}`
}

// withExecution is enc, a tool's encoding (a JSON object), with its
// execution member added last.
func withExecution(enc []byte, support string) []byte {
	m := executionMember(support)
	out := make([]byte, 0, len(enc)+len(m))
	out = append(out, enc[:len(enc)-1]...)
	out = append(out, m...)
	return append(out, '}')
}

// initializeWithTasks encodes res, an initialize result, with the tasks
// capability added to its capabilities.
func initializeWithTasks(res *sdk.InitializeResult) ([]byte, error) {
	caps := res.Capabilities
	if caps == nil {
		caps = &sdk.ServerCapabilities{}
	}
	c, err := json.Marshal(caps)
	if err != nil {
		return nil, err
	}
	shallow := *res
	shallow.Capabilities = caps
	b, err := json.Marshal(&shallow)
	if err != nil {
		return nil, err
	}
	// The capabilities' encoding is the one inside the result's: the same
	// encoder wrote both, and a string cannot hold the member's quotes
	// unescaped, so the first match is the member.
	at := bytes.Index(b, append([]byte(`"capabilities":`), c...))
	if at < 0 {
		return nil, errors.New("the initialize result's capabilities were not found in its encoding")
	}
	end := at + len(`"capabilities":`) + len(c) - 1
	out := make([]byte, 0, len(b)+len(tasksCapability)+1)
	out = append(out, b[:end]...)
	if len(c) > 2 {
		out = append(out, ',')
	}
	out = append(out, tasksCapability...)
	return append(out, b[end:]...), nil
}

// tasksInitializeResult is an initialize result the SDK answers, encoded
// with the tasks capability.
type tasksInitializeResult struct{ *sdk.InitializeResult }

func (r tasksInitializeResult) MarshalJSON() ([]byte, error) {
	return initializeWithTasks(r.InitializeResult)
}

// declareTasks is res, an initialize result the SDK made, as the gateway
// answers it: with the tasks capability when the revision agreed is the
// one that has tasks.
func declareTasks(res sdk.Result) sdk.Result {
	if r, ok := res.(*sdk.InitializeResult); ok && r != nil && r.ProtocolVersion == tasksProtocol {
		return tasksInitializeResult{r}
	}
	return res
}

// tasksToolsResult is a tools/list result the SDK answers, its tools
// encoded with their execution member where support names one.
type tasksToolsResult struct {
	*sdk.ListToolsResult
	support map[string]string
}

func (r tasksToolsResult) MarshalJSON() ([]byte, error) {
	// Tools is the result's last member: the result without them ends
	// with an empty list, which the tools, each encoded as the SDK
	// encodes it, fill.
	shallow := *r.ListToolsResult
	shallow.Tools = []*sdk.Tool{}
	b, err := json.Marshal(&shallow)
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b, []byte(`[]}`)) {
		return nil, errors.New("the tools/list result does not end with its tools")
	}
	out := bytes.NewBuffer(make([]byte, 0, len(b)+256*len(r.Tools)))
	out.Write(b[:len(b)-2])
	for i, t := range r.Tools {
		enc, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteByte(',')
		}
		if s := r.support[t.Name]; taskSupportShown(s) {
			enc = withExecution(enc, s)
		}
		out.Write(enc)
	}
	out.WriteString(`]}`)
	return out.Bytes(), nil
}

// declareTaskSupport is res, the SDK's answer to req, a tools/list of o's
// server, as the gateway answers it: in the revision that has tasks, with
// the execution member of every offered tool that takes them.
func (o *offer) declareTaskSupport(req sdk.Request, res sdk.Result) sdk.Result {
	r, ok := res.(*sdk.ListToolsResult)
	if !ok || r == nil || listVersion(req) != tasksProtocol {
		return res
	}
	o.mu.RLock()
	var support map[string]string
	for name, p := range o.offered {
		if taskSupportShown(p.taskSupport) {
			if support == nil {
				support = map[string]string{}
			}
			support[name] = p.taskSupport
		}
	}
	o.mu.RUnlock()
	if support == nil {
		return res
	}
	return tasksToolsResult{ListToolsResult: r, support: support}
}

// listVersion is the revision a tools/list the SDK serves is of: the one
// its request says it is of (the version the client agreed, which it
// sends with every request after initialize), else the one the session
// was asked for.
func listVersion(req sdk.Request) string {
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		if v := extra.Header.Get("Mcp-Protocol-Version"); v != "" {
			return v
		}
	}
	if lreq, ok := req.(*sdk.ListToolsRequest); ok {
		return lreq.ProtocolVersion()
	}
	return ""
}
