package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcp-catalog/operator/internal/egress"
)

// Defaults for the Endpoint ceilings.
const (
	DefaultMaxPages = 100
	DefaultMaxTools = 10000
	// DefaultMaxCatalogBytes is the budget for all definitions one import
	// keeps. Generous for real catalogs (ten thousand tools of 1.6 KiB
	// each), and small enough that a hostile server cannot make an import
	// hold more than a small multiple of it.
	DefaultMaxCatalogBytes = 16 << 20
	// DefaultMaxDefinitionBytes bounds one definition as stored. An McpTool
	// carries the definition in its status, so this also keeps every object
	// far below the API server's request size limit.
	DefaultMaxDefinitionBytes = 128 << 10
)

// Endpoint is one configured server, as the caller resolved it for one
// operation (the credential already read from wherever it lives).
type Endpoint struct {
	// Name identifies the server in errors (for example "namespace/name").
	// It must not contain anything secret; the URL never appears in errors.
	Name string
	// URL is the MCP endpoint, http or https, without userinfo.
	URL string
	// Credential is attached to every leg; nil sends none.
	Credential *Credential
	// AllowInsecureCredential permits sending the credential over plain
	// http. Without it such an operation is refused before any byte is sent.
	AllowInsecureCredential bool
	// AllowPrivateNetwork is the server's own opt-in to private networks:
	// the dialer then reaches the private ranges Options.Egress allows for
	// Namespace. Link-local and metadata addresses stay refused.
	AllowPrivateNetwork bool
	// Namespace is the namespace the server is declared in; it selects the
	// per-namespace ranges of Options.Egress.
	Namespace string
	// CABundle, when set, replaces the system roots for verifying an https
	// server's certificate. Connections are pooled per bundle, so a
	// connection verified against one bundle is never reused for another.
	CABundle *egress.CABundle
	// Timeout is the budget of one whole operation; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxPages is the tools/list page ceiling; 0 means DefaultMaxPages.
	MaxPages int
	// MaxTools is the tools/list tool ceiling; 0 means DefaultMaxTools.
	MaxTools int
	// MaxCatalogBytes is the budget for all definitions one ListTools keeps
	// (DefinitionSize summed); 0 means DefaultMaxCatalogBytes. Exceeding it
	// fails the operation with KindCatalogTooLarge.
	MaxCatalogBytes int64
	// MaxDefinitionBytes bounds one definition (DefinitionSize); 0 means
	// DefaultMaxDefinitionBytes. A larger one is skipped with
	// SkipDefinitionTooLarge.
	MaxDefinitionBytes int64
}

// Options configure a Client.
type Options struct {
	// HTTPClient replaces the HTTP client, for tests that fake the server.
	// Its redirect policy is overridden: redirects are never followed. nil
	// builds a client whose dialer enforces the address policy.
	HTTPClient *http.Client
	// AllowPrivateNetworks lets every server reach loopback and private
	// ranges (development and tests); link-local and metadata stay refused.
	// It is Egress.AllowAllPrivate.
	AllowPrivateNetworks bool
	// Egress is the administrator's private-network policy, which a
	// server's opt-in can only use, not extend.
	Egress egress.Policy
	// ClientName and ClientVersion identify this client to servers
	// (clientInfo, User-Agent). Defaults: "mcp-catalog-operator", "dev".
	ClientName, ClientVersion string
	// EraCacheTTL is how long a server's protocol era is remembered per
	// origin; 0 means DefaultEraCacheTTL, negative disables the cache.
	EraCacheTTL time.Duration
	// Clock is the clock of budgets, credential expiry, latency and the
	// era cache; nil means the real one.
	Clock Clock
}

// Clock tells the time: the Now of k8s.io/utils/clock.PassiveClock, whose
// clocks and fakes satisfy it. It is declared here because the client
// depends on nothing from Kubernetes.
type Clock interface {
	Now() time.Time
}

// Client talks to MCP servers. It is safe for concurrent use; operations
// share only the connection pools, the id namespace and the era cache.
type Client struct {
	hc            *http.Client
	clientName    string
	clientVersion string
	// metas holds encodedMeta's answers by revision.
	metas     sync.Map
	userAgent string
	// userAgentValue is userAgent as a header's values, shared by every
	// request.
	userAgentValue []string
	now            func() time.Time
	egress         egress.Policy
	eras           *eraCache
	ids            *idSource
	// trust holds one HTTP client per CA bundle, built from hc.
	trust *egress.Trust
}

// New builds a Client.
func New(opts Options) *Client {
	c := &Client{
		clientName:    opts.ClientName,
		clientVersion: opts.ClientVersion,
		egress:        opts.Egress,
		ids:           processIDs,
	}
	if c.clientName == "" {
		c.clientName = "mcp-catalog-operator"
	}
	if c.clientVersion == "" {
		c.clientVersion = "dev"
	}
	c.userAgent = c.clientName + "/" + c.clientVersion
	c.userAgentValue = []string{c.userAgent}
	if opts.AllowPrivateNetworks {
		c.egress.AllowAllPrivate = true
	}
	c.now = time.Now
	if opts.Clock != nil {
		c.now = opts.Clock.Now
	}
	ttl := opts.EraCacheTTL
	if ttl == 0 {
		ttl = DefaultEraCacheTTL
	}
	c.eras = newEraCache(ttl)
	var hc http.Client
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	} else {
		hc.Transport = egress.NewTransport(nil)
	}
	// Never follow a redirect: the 3xx itself is the answer, so neither the
	// body nor the credential can be steered to another host.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// No cookie jar: MCP uses no cookies, and a jar would carry state
	// between operations and servers.
	hc.Jar = nil
	c.hc = &hc
	c.trust = egress.NewTrust(c.hc)
	return c
}

// ServerInfo is what a server says about itself; untrusted, for display.
type ServerInfo struct {
	Name, Title, Version string
}

// ProbeResult is the outcome of a handshake.
type ProbeResult struct {
	Server ServerInfo
	// ProtocolVersion is the revision the operation used.
	ProtocolVersion string
	// Capabilities are the sorted names of the capabilities the server
	// declared (names outside [A-Za-z0-9_.-/]{1,64} are left out).
	Capabilities []string
	// ToolsListChanged is true when the server declared tools.listChanged:
	// it says it notifies clients when its tool list changes (ListenTools).
	ToolsListChanged bool
	// Instructions is the server's optional guidance text, bounded.
	Instructions string
	// SessionIssued is true when a legacy server assigned a session id.
	SessionIssued bool
	// Latency is the time from the start of the operation to the end of the
	// handshake.
	Latency time.Duration
}

// Tool is one validated tool definition.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the output of NormalizeSchema.
	InputSchema json.RawMessage
	// OutputSchema is the schema of the tool's structured results in its
	// canonical form (CanonicalJSON), or nil when the server sent none.
	OutputSchema json.RawMessage
	// Annotations are the server's hints as sent: untrusted, never a basis
	// for authorisation.
	Annotations *ToolAnnotations // TaskSupport is the server's execution.taskSupport ("forbidden",
	// "optional", "required"), or "" when it sent none or another value.
	TaskSupport string
}

// ToolAnnotations are the behaviour hints a server may attach to a tool.
type ToolAnnotations struct {
	Title                                                        string
	ReadOnlyHint, DestructiveHint, IdempotentHint, OpenWorldHint *bool
}

// The reasons a tool is skipped during import.
const (
	// SkipInvalidName: the name fails ValidToolName (or is not a string).
	SkipInvalidName = "InvalidName"
	// SkipDuplicateName: more than one definition carries the name; none of
	// them is imported, since which one the server would run is unknowable.
	SkipDuplicateName = "DuplicateName"
	// SkipInvalidSchema: NormalizeSchema rejected the input schema, or the
	// output schema is not an object, repeats a member name or is too
	// large.
	SkipInvalidSchema = "InvalidSchema"
	// SkipMissingSchema: the definition has no input schema.
	SkipMissingSchema = "MissingSchema"
	// SkipInvalidDefinition: the definition is not an object or a field has
	// the wrong type.
	SkipInvalidDefinition = "InvalidDefinition"
	// SkipDefinitionTooLarge: the definition as stored exceeds
	// Endpoint.MaxDefinitionBytes.
	SkipDefinitionTooLarge = "DefinitionTooLarge"
)

// SkippedTool is a tool that was offered but not imported.
type SkippedTool struct {
	// Name as sent; for an invalid name a bounded, printable rendering.
	Name string
	// Reason is one of the Skip* constants.
	Reason string
}

// Catalog is the outcome of ListTools.
type Catalog struct {
	Probe   ProbeResult
	Tools   []Tool
	Skipped []SkippedTool
	// Pages is the number of tools/list pages read.
	Pages int
	// TTL is how long the server said the list stays fresh (the ttlMs of
	// 2026-07-28 results; the shortest of its pages, at most MaxTTL). Zero
	// when no page said, or said 0.
	TTL time.Duration
}

// MaxTTL bounds Catalog.TTL: a server's freshness hint never asks a caller
// to wait longer than this.
const MaxTTL = time.Hour

// CallOutcome is the outcome of CallTool.
type CallOutcome struct {
	// IsError is the server's isError: the tool ran and reported failure.
	IsError bool
	// InputRequired is set when a 2026-07-28 server asked for input
	// (WithInputRounds): Result is its input_required result as sent,
	// and Text is empty.
	InputRequired bool
	// Text is the text content, led by a note when blocks were dropped.
	Text string
	// Dropped counts dropped non-text blocks by Dropped* name.
	Dropped map[string]int
	// Result is the tools/call result as the server sent it (a JSON
	// object, already checked as Text was read from it), for a caller that
	// asked for it (WithFullResult); nil otherwise. It is the caller's to
	// distrust: nothing in it was screened.
	Result json.RawMessage
	// Latency is the time from the start of the operation to the answer.
	Latency time.Duration
	// Task is set when the call was task-augmented (WithTask) and the
	// server created a task: Result is its CreateTaskResult as sent, and
	// the server's session is kept for the task's later requests.
	Task *TaskSession
	// split holds the long strings of Result left where they were read
	// (splice.go): Segments and Expand read them.
	split *splice
}

// CallOption adjusts one CallTool.
type CallOption func(*callOptions)

type callOptions struct {
	schema  json.RawMessage
	trace   TraceContext
	info    *CallInfo
	full    bool
	body    int64
	encoded []byte
	// interaction relays what the server sends during the call.
	interaction Interaction
	progress    func(Progress)
	rounds      *inputRound
	// task is the task metadata of a task-augmented call (WithTask).
	task json.RawMessage
}

// WithEncodedArguments gives the call's arguments already encoded, exactly
// as encoding/json encodes the args map passed with them: they are sent as
// they are rather than checked and encoded again. The caller keeps the two
// equal (the args map is still what headers mirrored from arguments are
// read from).
func WithEncodedArguments(b []byte) CallOption {
	return func(o *callOptions) { o.encoded = b }
}

// WithMaxBodyBytes raises the cap on the call's response bodies to n bytes
// (never below MaxBodyBytes), for a caller that passes results on whole
// and bounds what they may carry itself.
func WithMaxBodyBytes(n int64) CallOption {
	return func(o *callOptions) { o.body = n }
}

// WithFullResult has CallTool keep the result as the server sent it in
// CallOutcome.Result, beside the text this client reads of it. The
// operator's own uses (import, probe, the CLI) read text only; a caller
// that passes results on whole (the gateway) asks for the rest.
func WithFullResult() CallOption {
	return func(o *callOptions) { o.full = true }
}

// TraceContext is W3C trace context (traceparent and tracestate) to send
// with a call: in the headers of every request of the operation and, in
// the 2026-07-28 revision, which reserves these two unprefixed keys for it,
// in the tools/call params._meta.
type TraceContext struct {
	Traceparent, Tracestate string
}

// WithTraceContext sends trace context with the call. A value that is
// empty, too long or not a valid header value is not sent.
func WithTraceContext(tc TraceContext) CallOption {
	return func(o *callOptions) {
		if !validTraceValue(tc.Traceparent) {
			return
		}
		if !validTraceValue(tc.Tracestate) {
			tc.Tracestate = ""
		}
		o.trace = tc
	}
}

// maxTraceValue bounds a trace context value. W3C asks that at least 512
// characters of tracestate be passed on and lets longer ones be dropped.
const maxTraceValue = 1024

func validTraceValue(v string) bool {
	return v != "" && len(v) <= maxTraceValue && validHeaderValue(v)
}

// CallInfo is what a CallTool tells about itself, success or not, for the
// caller's trace: the protocol revision spoken and the JSON-RPC id of the
// tools/call request (empty when it was never sent).
type CallInfo struct {
	ProtocolVersion string
	RequestID       string
}

// WithCallInfo has CallTool fill info.
func WithCallInfo(info *CallInfo) CallOption {
	return func(o *callOptions) { o.info = info }
}

// WithInputSchema gives CallTool the tool's input schema (as stored from
// ListTools) so that arguments annotated with x-mcp-header are mirrored into
// Mcp-Param-* headers, which 2026-07-28 servers require.
func WithInputSchema(schema json.RawMessage) CallOption {
	return func(o *callOptions) { o.schema = schema }
}

// operation is the state of one Probe, ListTools or CallTool.
type operation struct {
	// encodedArgs are a call's arguments as its caller encoded them
	// (WithEncodedArguments); nil: encoded here.
	encodedArgs []byte

	c      *Client
	ep     Endpoint
	url    *url.URL
	origin string
	budget *budget
	grant  egress.Grant
	// hc is the HTTP client for this endpoint's trust anchors.
	hc *http.Client

	era          era
	version      string
	session      string
	eraFromCache bool
	probe        ProbeResult

	// inflight is the id of the request whose answer has not been read yet;
	// a cancelled operation tells a session-keeping server to stop it.
	inflight string
	// trace is sent with every request of the operation.
	trace TraceContext
	// maxBody raises the cap on response bodies above MaxBodyBytes.
	maxBody int64
	// interaction is the caller's for what the server sends beside its
	// answers (WithInteraction); nil refuses the server's requests.
	interaction Interaction
	// serverRequests counts the server's requests answered.
	serverRequests int
	// progress receives the call's progress (WithProgress), asked for
	// under progressToken.
	progress      func(Progress)
	progressToken string
	// rounds is set when the caller takes part in input-required rounds
	// (WithInputRounds).
	rounds *inputRound
	// task is a task-augmented call's task metadata (WithTask).
	task json.RawMessage
}

// begin validates the endpoint and starts the budget. Nothing is sent.
func (c *Client) begin(ep Endpoint) (*operation, error) {
	o := &operation{c: c, ep: ep, grant: c.egress.Grant(ep.Namespace, ep.AllowPrivateNetwork)}
	u, err := url.Parse(ep.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, o.failDetail(KindInvalidEndpoint, "", "URL must be an absolute http or https URL")
	}
	if u.User != nil {
		// Go would turn userinfo into a Basic credential behind our back.
		return nil, o.failDetail(KindInvalidEndpoint, "", "URL must not carry userinfo")
	}
	u.Fragment, u.RawFragment = "", ""
	o.url = u
	o.origin = originOf(u)
	hc, err := c.trust.Client(ep.CABundle)
	if err != nil {
		return nil, o.failDetail(KindInvalidEndpoint, "", err.Error())
	}
	o.hc = hc
	if cr := ep.Credential; cr != nil {
		if cr.Value.IsZero() || !validHeaderValue(cr.Value.Reveal()) {
			return nil, o.failDetail(KindInvalidEndpoint, "", "credential value is empty or not a valid header value")
		}
		if cr.Header != "" && (!isToken(cr.Header) || reservedHeader(cr.Header)) {
			return nil, o.failDetail(KindInvalidEndpoint, "", "credential header name is invalid or reserved")
		}
		if u.Scheme != "https" && !ep.AllowInsecureCredential {
			return nil, o.failDetail(KindInsecureCredential, "", "plain http without AllowInsecureCredential")
		}
	}
	if o.ep.MaxPages <= 0 {
		o.ep.MaxPages = DefaultMaxPages
	}
	if o.ep.MaxTools <= 0 {
		o.ep.MaxTools = DefaultMaxTools
	}
	o.budget = newBudget(ep.Timeout, c.now)
	return o, nil
}

// end tears down a legacy session. It is bounded by the operation's budget
// and its outcome is ignored: the operation's result is already decided.
// Once the caller has cancelled or the budget is spent, it runs in the
// background instead (see abandon).
func (o *operation) end(ctx context.Context) {
	if o.session == "" {
		return
	}
	if ctx.Err() == nil && !o.budget.exhausted() {
		_, _ = o.exchange(ctx, leg{method: methodDelete, version: o.version})
		return
	}
	// The caller gave up, or the budget is spent. The caller is not kept
	// waiting, but a session-keeping server would otherwise go on running
	// the abandoned request and keep the session: tell it, in the
	// background and within a small budget of its own, to cancel the
	// request (as the legacy revisions ask clients to) and end the session.
	cleanup := *o
	cleanup.budget = newBudget(cleanupBudget, o.c.now)
	go cleanup.abandon(context.WithoutCancel(ctx))
}

// cleanupBudget bounds the notifications sent after an operation was
// abandoned.
const cleanupBudget = 2 * time.Second

func (o *operation) abandon(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, cleanupBudget)
	defer cancel()
	if o.inflight != "" && o.era == eraLegacy {
		_, _ = o.exchange(ctx, leg{
			method:  "notifications/cancelled",
			params:  map[string]any{"requestId": o.inflight, "reason": "the client cancelled the request"},
			notify:  true,
			version: o.version,
		})
	}
	_, _ = o.exchange(ctx, leg{method: methodDelete, version: o.version})
}

// open begins an operation and completes its handshake; the caller ends
// the operation once it succeeded (a failed handshake is ended here).
func (c *Client) open(ctx context.Context, ep Endpoint) (*operation, error) {
	o, err := c.begin(ep)
	if err != nil {
		return nil, err
	}
	if err := o.connect(ctx, true); err != nil {
		o.end(ctx)
		return nil, err
	}
	return o, nil
}

// Probe performs the handshake only.
func (c *Client) Probe(ctx context.Context, ep Endpoint) (*ProbeResult, error) {
	o, err := c.open(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer o.end(ctx)
	p := o.probe
	return &p, nil
}

// ListTools performs the handshake and the paged tools/list, and returns the
// validated, normalised catalog. Any failure fails the whole operation: a
// partial catalog is never returned.
func (c *Client) ListTools(ctx context.Context, ep Endpoint) (*Catalog, error) {
	o, err := c.open(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer o.end(ctx)
	b := newCatalogBuilder(ep.MaxCatalogBytes, ep.MaxDefinitionBytes)
	pages, err := o.listTools(ctx, b)
	if err != nil {
		return nil, err
	}
	tools, skipped := b.finish()
	return &Catalog{Probe: o.probe, Tools: tools, Skipped: skipped, Pages: pages, TTL: b.ttl}, nil
}

// CallTool performs the handshake and one tools/call of remoteName. The call
// is never retried, with one exception: when the era remembered for the
// origin turns out wrong (the server rejected the request with a 4xx that is
// not a modern protocol error, so it did not run it, and detecting the era
// again finds another era or version), the call is sent once more in the
// right era.
func (c *Client) CallTool(ctx context.Context, ep Endpoint, remoteName string, args map[string]any, opts ...CallOption) (*CallOutcome, error) {
	o, err := c.begin(ep)
	if err != nil {
		return nil, err
	}
	if !ValidToolName(remoteName) {
		return nil, o.failDetail(KindInvalidArgument, "tools/call", "tool name is invalid")
	}
	if args == nil {
		args = map[string]any{}
	}
	var co callOptions
	for _, opt := range opts {
		opt(&co)
	}
	if co.encoded == nil {
		if _, err := json.Marshal(args); err != nil {
			return nil, &Error{Kind: KindInvalidArgument, Server: ep.Name, Method: "tools/call", Detail: "arguments do not encode as JSON", Err: err}
		}
	}
	var params http.Header
	if co.schema != nil {
		params, err = paramHeaders(co.schema, args)
		if err != nil {
			return nil, &Error{Kind: KindInvalidArgument, Server: ep.Name, Method: "tools/call", Detail: "input schema is invalid", Err: err}
		}
	}
	o.trace, o.maxBody, o.encodedArgs, o.interaction = co.trace, co.body, co.encoded, co.interaction
	if co.progress != nil {
		o.progress, o.progressToken = co.progress, o.c.ids.next()
	}
	o.rounds, o.task = co.rounds, co.task
	if co.info != nil {
		defer func() { co.info.ProtocolVersion = o.version }()
	}
	defer o.end(ctx)
	if err := o.connect(ctx, false); err != nil {
		return nil, err
	}
	res, err := o.callTool(ctx, remoteName, args, params, co.info, co.full)
	if err != nil && o.eraFromCache && o.era == eraModern && staleModern(err) {
		// The remembered era may be wrong. Detect it again; only if the
		// server now speaks another era or version is the (rejected, so
		// never run) call sent again.
		was := o.version
		o.c.eras.forget(o.origin)
		o.eraFromCache = false
		if derr := o.detect(ctx, false); derr != nil {
			return nil, derr
		}
		if o.era == eraModern && o.version == was {
			return nil, err
		}
		res, err = o.callTool(ctx, remoteName, args, params, co.info, co.full)
	}
	if err != nil {
		return nil, err
	}
	if res.Task {
		// The task lives in the server's session: kept, not ended.
		ts := &TaskSession{Session: o.session, Version: o.version}
		o.session = ""
		return &CallOutcome{Result: res.Raw, Task: ts, Latency: o.budget.elapsed()}, nil
	}
	return &CallOutcome{IsError: res.IsError, InputRequired: res.InputRequired, Text: res.Text, Dropped: res.Dropped, Result: res.Raw, Latency: o.budget.elapsed(), split: res.split}, nil
}

func (o *operation) callTool(ctx context.Context, name string, args map[string]any, params http.Header, info *CallInfo, full bool) (*callResult, error) {
	var sent any = args
	if o.encodedArgs != nil {
		sent = rawJSON(o.encodedArgs)
	}
	p := map[string]any{"name": name, "arguments": sent}
	l := o.workLeg("tools/call", p)
	l.name = name
	if o.era == eraModern {
		l.extra = params
		if o.trace.Traceparent != "" {
			meta := p["_meta"].(map[string]any)
			meta["traceparent"] = o.trace.Traceparent
			if o.trace.Tracestate != "" {
				meta["tracestate"] = o.trace.Tracestate
			}
		}
	}
	if o.rounds != nil && o.era == eraModern {
		if o.rounds.responses != nil {
			p["inputResponses"] = rawJSON(o.rounds.responses)
		}
		if o.rounds.state != "" {
			p["requestState"] = o.rounds.state
		}
	}
	if o.task != nil {
		if o.era == eraModern {
			return nil, o.failDetail(KindTasksUnsupported, "tools/call", "the server speaks 2026-07-28, whose tasks extension this client does not speak")
		}
		p["task"] = rawJSON(o.task)
	}
	if o.progressToken != "" {
		meta, _ := p["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			p["_meta"] = meta
		}
		meta["progressToken"] = o.progressToken
	}
	if info != nil {
		l.sent = &info.RequestID
	}
	msg, err := o.requestMessage(ctx, l)
	if err != nil {
		return nil, err
	}
	if o.rounds != nil && l.modern {
		if v := msg.tape.member(msg.resultAt, "resultType"); v >= 0 && msg.tape.stringIs(v, "input_required") {
			// The server asks its caller for input: passed on as sent.
			res := &callResult{InputRequired: true, Raw: bytes.Clone(msg.expandedResult())}
			msg.release()
			return res, nil
		}
	}
	if o.task != nil {
		if res, ok, err := createdTask(msg.expandedResult()); ok {
			msg.release()
			if err != nil {
				return nil, o.protoFail("tools/call", err)
			}
			return res, nil
		}
	}
	var res *callResult
	if msg.tape != nil {
		res, err = flattenResultAt(msg.tape, msg.resultAt)
	} else {
		res, err = flattenCallResult(msg.result)
	}
	if err == nil && full {
		// A large result (one carrying an image) stays in the body it
		// was read into, which is the outcome's from now on.
		res.Raw = msg.keep()
		if msg.tape != nil {
			res.split = msg.tape.split
		}
	}
	// Otherwise the outcome holds copies only.
	msg.release()
	if err != nil {
		return nil, o.protoFail("tools/call", err)
	}
	return res, nil
}

// workLeg builds a request leg in the operation's negotiated era.
func (o *operation) workLeg(method string, params map[string]any) leg {
	if o.era == eraModern {
		return leg{method: method, params: o.withMeta(params), version: o.version, modern: true}
	}
	return leg{method: method, params: params, version: o.version}
}

// withMeta adds the 2026-07-28 per-request metadata: protocol version, client
// identity, and the capabilities this client declares (clientCapabilities).
func (o *operation) withMeta(params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	if o.trace.Traceparent == "" && o.progressToken == "" {
		// The same for every request of this client and revision: encoded
		// once, not built and sorted per request. A traced request, or
		// one asking for progress, adds to it (callTool), so it gets the
		// map.
		params["_meta"] = o.c.encodedMeta(o.version)
		return params
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    o.version,
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": o.c.clientName, "version": o.c.clientVersion},
		"io.modelcontextprotocol/clientCapabilities": clientCapabilities,
	}
	return params
}

// encodedMeta is withMeta's metadata for version, encoded as json.Marshal
// would encode the map (members in key order), once per revision.
func (c *Client) encodedMeta(version string) rawJSON {
	if v, ok := c.metas.Load(version); ok {
		return v.(rawJSON)
	}
	b, _ := json.Marshal(map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": c.clientName, "version": c.clientVersion},
		"io.modelcontextprotocol/clientCapabilities": clientCapabilities,
	})
	v, _ := c.metas.LoadOrStore(version, rawJSON(b))
	return v.(rawJSON)
}

// requestMessage performs a leg whose answer must be a JSON-RPC result
// object and returns the message, whose tape the caller may read and then
// release.
func (o *operation) requestMessage(ctx context.Context, l leg) (*message, error) {
	msg, err := o.answerMessage(ctx, l)
	if err != nil {
		return nil, err
	}
	if l.modern {
		if err := o.checkResultType(l.method, msg.tape, msg.resultAt); err != nil {
			return nil, err
		}
	}
	return msg, nil
}

// answerMessage performs a leg and returns its message with the JSON-RPC
// result as sent, before any check of the result's shape.
func (o *operation) answerMessage(ctx context.Context, l leg) (*message, error) {
	r, err := o.exchange(ctx, l)
	if err != nil {
		return nil, err
	}
	if err := o.statusErr(l.method, r); err != nil {
		return nil, err
	}
	if r.msg.err != nil {
		return nil, o.rpcErr(l.method, r.status, r.msg.err)
	}
	return r.msg, nil
}

// checkResultType applies the 2026-07-28 resultType rules to the result at
// entry r of t: absent means "complete"; "input_required" asks for client
// input this client does not provide; any other value is invalid.
func (o *operation) checkResultType(method string, t *tape, r int) error {
	if t.hasDuplicate(r) {
		return o.failDetail(KindInvalidResponse, method, "result is malformed")
	}
	v := t.member(r, "resultType")
	if v < 0 {
		return nil
	}
	rt, ok := t.stringAt(v)
	if !ok && t.e[v].kind != kNull {
		return o.failDetail(KindInvalidResponse, method, "resultType is not a string")
	}
	switch rt {
	case "complete":
		return nil
	case "input_required":
		if o.rounds != nil && method == "tools/call" {
			return nil
		}
		// The result is kept for a caller that shows its user what was
		// asked (the CLI); it is never part of the error's text.
		return &Error{Kind: KindInputRequired, Server: o.ep.Name, Method: method, InputRequired: bytes.Clone(t.raw(r))}
	default:
		return o.failDetail(KindInvalidResponse, method, "unknown resultType")
	}
}

// staleModern reports whether a failed modern request says the remembered
// era is wrong: a 4xx without a recognised modern error, or the server no
// longer supporting the remembered version.
func staleModern(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if e.RPCCode == codeUnsupportedProtocolVersion {
		return true
	}
	return legacySignal(e)
}

// legacySignal reports whether a failed modern attempt points to a legacy
// server: a 4xx other than the authentication and rate-limit statuses whose
// body is not a recognised modern error, a 2xx JSON-RPC error that is not
// one (a legacy server that answered "method not found"), or a success to
// server/discover whose result is not a discovery result (a legacy server
// that answers unknown methods leniently).
func legacySignal(e *Error) bool {
	if isModernErrorCode(e.RPCCode) {
		return false
	}
	if errors.Is(e.Err, errNotDiscoverResult) {
		return true
	}
	switch s := e.StatusCode; {
	case s == http.StatusUnauthorized, s == http.StatusForbidden,
		s == http.StatusProxyAuthRequired, s == http.StatusTooManyRequests:
		return false
	case s >= 400 && s <= 499:
		return true
	case s >= 200 && s <= 299:
		return e.Kind == KindRPCError
	}
	return false
}

// validHeaderValue refuses control characters, which would let a value end
// the header line.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// reservedHeader names headers a credential may not be put in, because the
// transport or the protocol owns them.
func reservedHeader(name string) bool {
	switch strings.ToLower(name) {
	case "host", "content-type", "content-length", "transfer-encoding", "connection",
		"accept", "user-agent", "te", "trailer", "upgrade", "cookie", "proxy-authorization",
		"mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id",
		"traceparent", "tracestate":
		return true
	}
	return strings.HasPrefix(strings.ToLower(name), "mcp-param-")
}
