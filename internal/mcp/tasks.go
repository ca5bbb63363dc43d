package mcp

import (
	"context"
	"encoding/json"
)

// Tasks of the 2025-11-25 revision (experimental there): a tools/call
// carrying task metadata (WithTask) is answered with a CreateTaskResult,
// and the task is then polled (tasks/get), its result fetched
// (tasks/result) or cancelled (tasks/cancel) by its id. A server of the
// initialize era may keep its tasks in the session the call was made in
// (the TypeScript SDK's in-memory store does), so a task-augmented call
// keeps that session rather than ending it, and the task's later requests
// are sent in it (TaskSession). The 2026-07-28 revision moved tasks into
// an extension of its own, which this client does not speak.

// TaskSession is where a server keeps a task created by a task-augmented
// call: the session the call was made in ("" for a server that keeps
// none) and the revision it negotiated.
type TaskSession struct {
	Session string `json:"s,omitempty"`
	Version string `json:"v"`
}

// WithTask makes the call task-augmented: task is the task metadata sent
// as the call's params.task (a JSON object, such as {"ttl":60000}).
func WithTask(task json.RawMessage) CallOption {
	return func(o *callOptions) { o.task = task }
}

// createdTask reads a task-augmented call's answer: a CreateTaskResult,
// whose task names its id and status. ok is false for an answer without
// a task, which a server that made no task of the call sends (its result,
// read as any call's).
func createdTask(result json.RawMessage) (res *callResult, ok bool, err error) {
	m, err := decodeObject(result)
	if err != nil {
		return nil, true, protoErr(KindInvalidResponse, "tools/call result is malformed")
	}
	if m["task"] == nil {
		return nil, false, nil
	}
	t, err := decodeObject(m["task"])
	if err != nil {
		return nil, true, protoErr(KindInvalidResponse, "the task is not an object")
	}
	var id, status string
	if json.Unmarshal(t["taskId"], &id) != nil || id == "" || json.Unmarshal(t["status"], &status) != nil {
		return nil, true, protoErr(KindInvalidResponse, "the task has no taskId or status")
	}
	return &callResult{Task: true, Raw: append(json.RawMessage(nil), result...)}, true, nil
}

// TaskRequest sends one request about a task (tasks/get, tasks/cancel)
// in the session the task was created in and returns its result as the
// server sent it (an object). end ends that session afterwards, for a
// task the caller is done with.
func (c *Client) TaskRequest(ctx context.Context, ep Endpoint, ts TaskSession, method, taskID string, end bool) (json.RawMessage, error) {
	o, err := c.taskOperation(ctx, ep, ts, method)
	if err != nil {
		return nil, err
	}
	if end || ts.Session == "" {
		defer o.end(ctx)
	}
	msg, err := o.requestMessage(ctx, o.workLeg(method, map[string]any{"taskId": taskID}))
	if err != nil {
		return nil, err
	}
	defer msg.release()
	return append(json.RawMessage(nil), msg.result...), nil
}

// TaskResult sends tasks/result in the session the task was created in:
// the server answers once the task is over, with the result of the
// tools/call the task ran, read as CallTool reads a call's (the options
// WithMaxBodyBytes and WithInteraction apply). The session is ended
// afterwards: the task is over.
func (c *Client) TaskResult(ctx context.Context, ep Endpoint, ts TaskSession, taskID string, opts ...CallOption) (*CallOutcome, error) {
	var co callOptions
	for _, opt := range opts {
		opt(&co)
	}
	o, err := c.taskOperation(ctx, ep, ts, "tasks/result")
	if err != nil {
		return nil, err
	}
	o.maxBody, o.interaction = co.body, co.interaction
	defer o.end(ctx)
	msg, err := o.requestMessage(ctx, o.workLeg("tasks/result", map[string]any{"taskId": taskID}))
	if err != nil {
		return nil, err
	}
	res, err := flattenCallResult(msg.result)
	if err != nil {
		msg.release()
		return nil, o.protoFail("tasks/result", err)
	}
	res.Raw = msg.keep()
	return &CallOutcome{IsError: res.IsError, Text: res.Text, Dropped: res.Dropped, Result: res.Raw, Latency: o.budget.elapsed()}, nil
}

// taskOperation begins an operation in the task's session: no handshake
// when the server keeps one (the session is the task's), a new one when
// it keeps none.
func (c *Client) taskOperation(ctx context.Context, ep Endpoint, ts TaskSession, method string) (*operation, error) {
	o, err := c.begin(ep)
	if err != nil {
		return nil, err
	}
	if eraOfVersion(ts.Version) != eraLegacy {
		return nil, o.failDetail(KindTasksUnsupported, method, "the task's revision is not one whose tasks this client speaks")
	}
	if ts.Session == "" {
		if err := o.connect(ctx, false); err != nil {
			return nil, err
		}
		if o.era != eraLegacy {
			o.end(ctx)
			return nil, o.failDetail(KindTasksUnsupported, method, "the server no longer speaks the task's revision")
		}
		return o, nil
	}
	if !validSessionID(ts.Session) {
		return nil, o.failDetail(KindInvalidArgument, method, "the task's session id is invalid")
	}
	o.era, o.version, o.session = eraLegacy, ts.Version, ts.Session
	return o, nil
}
