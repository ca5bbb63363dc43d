package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/metrics"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// Path is where the gateway serves MCP.
const Path = "/mcp"

// Upstreams returns the endpoint a call made for actor is sent to, with its
// credential resolved (upstream.Endpoints).
type Upstreams interface {
	Call(ctx context.Context, srv *mcpv1alpha1.McpServer, actor credentials.Actor) (mcp.Endpoint, error)
}

// Gateway is the MCP endpoint agents call.
type Gateway struct {
	// Reader reads McpTools, McpServers and McpAccessPolicies (the cache).
	Reader    client.Reader
	Authn     Authenticator
	Authz     Authorizer
	Upstreams Upstreams
	MCP       *mcp.Client
	Audit     Sink
	// Recorder emits Events on McpTools for refusals and failures; may be
	// nil.
	Recorder events.EventRecorder
	// Version is reported to clients.
	Version string
	// ApprovalKey signs approval state; empty means a random key per
	// process (approvals then do not survive a restart, which is fine).
	ApprovalKey []byte
	Now         func() time.Time

	approver approver
	handler  http.Handler
}

// Handler returns the HTTP handler serving MCP at Path. Every request is
// authenticated; a session is bound to the identity that opened it.
//
// Two protocol eras are served on the one endpoint. The go-sdk serves the
// stateless 2026-07-28 revision only from a stateless handler, and
// server-to-client requests (the initialize era's elicitation, which
// approval needs) only from a stateful one, so a request is routed by the
// MCP-Protocol-Version header it carries: 2026-07-28 and later go to the
// stateless handler, everything else (initialize, and requests of a session)
// to the stateful one. Approval works in both: the initialize era asks the
// client's human on the session, 2026-07-28 returns an input-required
// result with signed request state.
func (g *Gateway) Handler() http.Handler {
	if g.handler != nil {
		return g.handler
	}
	// A read of a kind whose informer cannot sync (its RBAC missing, say)
	// would otherwise block until the agent gives up; bounded, it fails
	// the request with an error the log names.
	g.Reader = boundedReader{Reader: g.Reader, timeout: readTimeout}
	key := g.ApprovalKey
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	g.approver = approver{key: key, used: newNonceSet()}
	logger := slog.New(slog.DiscardHandler)
	stateful := sdk.NewStreamableHTTPHandler(g.serverFor, &sdk.StreamableHTTPOptions{
		SessionTimeout:               10 * time.Minute,
		PropagateRequestCancellation: true,
		Logger:                       logger,
	})
	stateless := sdk.NewStreamableHTTPHandler(g.serverFor, &sdk.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		Logger:                       logger,
	})
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The SDK asks for the request's server more than once per request
		// (once only to learn the protocol versions); the memo makes that one
		// listing, not several.
		r = r.WithContext(context.WithValue(r.Context(), memoKey{}, &serverMemo{}))
		if modernRequest(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	verified := auth.RequireBearerToken(g.verify, &auth.RequireBearerTokenOptions{})(route)
	mux := http.NewServeMux()
	mux.Handle(Path, verified)
	g.handler = mux
	return mux
}

// modernProtocol is the first revision without the initialize handshake.
const modernProtocol = "2026-07-28"

// modernRequest reports whether a request is of the stateless 2026-07-28
// era. Revisions are dates, so they compare as strings.
func modernRequest(r *http.Request) bool {
	return r.Header.Get("MCP-Protocol-Version") >= modernProtocol
}

type memoKey struct{}

// serverMemo holds the server built for one HTTP request.
type serverMemo struct {
	s *sdk.Server
}

// verify authenticates a bearer token. Any failure is a plain 401.
func (g *Gateway) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	id, err := g.Authn.Authenticate(ctx, token)
	if err != nil {
		if !errors.Is(err, ErrUnauthenticated) {
			logf.FromContext(ctx).Error(err, "gateway: authenticating a caller failed")
		}
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{
		// Binds the MCP session to this identity: another token cannot use it.
		UserID:     id.UID + "/" + id.Username,
		Expiration: g.now().Add(time.Minute),
		Extra:      map[string]any{"identity": id},
	}, nil
}

func identityOf(ti *auth.TokenInfo) *Identity {
	if ti == nil {
		return nil
	}
	id, _ := ti.Extra["identity"].(*Identity)
	return id
}

// serverFor builds the MCP server a session (or a stateless request) sees:
// the tools the caller may use at this moment. Calls are decided again when
// they are made, and a call of a tool the server does not offer is refused
// by the gate too, so that it is audited with its reason.
func (g *Gateway) serverFor(r *http.Request) *sdk.Server {
	id := identityOf(auth.TokenInfoFromContext(r.Context()))
	if id == nil {
		return nil
	}
	memo, _ := r.Context().Value(memoKey{}).(*serverMemo)
	if memo != nil && memo.s != nil {
		return memo.s
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "mcp-catalog-gateway", Version: g.Version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	if memo != nil {
		memo.s = s
	}
	if r.Header.Get("Mcp-Session-Id") != "" && !modernRequest(r) {
		// A request of an existing session is served by the server built
		// when the session began; the SDK asks for one here only to read
		// the protocol versions, which every server shares. Listing the
		// tools would cost a review per tool on every request.
		return s
	}
	tools, err := g.visibleTools(r.Context(), id)
	if err != nil {
		logf.FromContext(r.Context()).Error(err, "gateway: listing tools failed")
		return s
	}
	offered := make(map[string]bool, len(tools))
	for _, t := range tools {
		key := types.NamespacedName{Namespace: t.Namespace, Name: t.Name}
		if err := addTool(s, sdkTool(t), func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return g.call(ctx, req, key)
		}); err != nil {
			logf.FromContext(r.Context()).Error(err, "gateway: a tool cannot be offered", "tool", key.String())
			continue
		}
		offered[t.Status.LocalName] = true
	}
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			creq, ok := req.(*sdk.CallToolRequest)
			if !ok || creq.Params == nil || offered[creq.Params.Name] {
				return next(ctx, method, req)
			}
			return g.refuseUnoffered(ctx, creq), nil
		}
	})
	return s
}

// addTool adds a tool to a server. The SDK panics on a definition it
// cannot serve (a schema whose root is not an object, a bad x-mcp-header);
// the importer never stores one, but status is writable by others, and one
// bad tool must not take down the caller's whole session.
func addTool(s *sdk.Server, t *sdk.Tool, h sdk.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool's definition cannot be served: %v", p)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// refuseUnoffered answers a call of a tool this server did not offer the
// caller: the gate says why (no such tool, not servable, RBAC, ceiling),
// and the refusal is audited like any other. A tool that became callable
// after a session began is refused too: the session offers what was
// decided when it began, and a new session sees the change.
func (g *Gateway) refuseUnoffered(ctx context.Context, req *sdk.CallToolRequest) *sdk.CallToolResult {
	id := identityOf(req.Extra.TokenInfo)
	if id == nil {
		return refusal("the caller is not authenticated")
	}
	name := req.Params.Name
	rec := Record{CallID: newCallID(), Caller: id.Username, Namespace: id.Namespace}
	if wellFormedLocalName(name) {
		// Only a well-formed name is recorded: it is the caller's input.
		rec.LocalName = name
	}
	if _, h, err := arguments(req.Params.Arguments); err == nil {
		rec.ArgumentsHash = h
	}
	object, ok := objectNameOf(name)
	t := &mcpv1alpha1.McpTool{}
	if !ok || g.Reader.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: object}, t) != nil || t.Status.LocalName != name {
		return g.deny(ctx, rec, nil, DenyNotServable, "", "there is no tool of this name for the caller's namespace")
	}
	rec.Tool, rec.Server, rec.DataClass = t.Name, t.Spec.ServerRef.Name, string(t.Status.EffectiveDataClass)
	ceiling, err := g.ceiling(ctx, id)
	if err != nil {
		logf.FromContext(ctx).Error(err, "gateway: reading access policies failed")
		return refusal("the gateway could not decide on this call; try again")
	}
	reason, err := g.gate(ctx, id, t, ceiling)
	if err != nil {
		logf.FromContext(ctx).Error(err, "gateway: authorising a call failed")
		return refusal("the gateway could not decide on this call; try again")
	}
	if reason != "" {
		return g.deny(ctx, rec, t, reason, detailOf(reason, t), denialMessage(reason, t))
	}
	return g.deny(ctx, rec, t, DenyNotServable, DetailNotInSession,
		"this tool was not offered when the session began; start a new session to use it")
}

// maxLocalName bounds the local names recorded (mcp_, a server name of at
// most 45 characters, _ and a remote name of at most 128).
const maxLocalName = 4 + 45 + 1 + 128

// wellFormedLocalName reports whether name could be a local name: at most
// maxLocalName characters of [A-Za-z0-9_.-].
func wellFormedLocalName(name string) bool {
	if name == "" || len(name) > maxLocalName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// objectNameOf maps a local name, mcp_<server>_<remote>, to the McpTool
// name. Server names are DNS labels and hold no "_", so the first "_" after
// the prefix ends the server name.
func objectNameOf(local string) (string, bool) {
	rest, ok := strings.CutPrefix(local, "mcp_")
	if !ok {
		return "", false
	}
	server, remote, ok := strings.Cut(rest, "_")
	if !ok {
		return "", false
	}
	n, err := toolname.ObjectName(server, remote)
	return n, err == nil
}

// sdkTool presents an McpTool to agents: its local name and normalised
// schema, and hints that say what the gate assumes — a destructive,
// non-idempotent write — rather than what the remote server claims.
func sdkTool(t *mcpv1alpha1.McpTool) *sdk.Tool {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.Status.InputSchema != nil && len(t.Status.InputSchema.Raw) > 0 {
		schema = t.Status.InputSchema.Raw
	}
	destructive, openWorld := true, true
	return &sdk.Tool{
		Name:        t.Status.LocalName,
		Title:       t.Status.Title,
		Description: t.Status.Description,
		InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive, IdempotentHint: false, ReadOnlyHint: false, OpenWorldHint: &openWorld},
	}
}

// visibleTools applies the gate's first three steps to every tool of the
// caller's namespace.
func (g *Gateway) visibleTools(ctx context.Context, id *Identity) ([]*mcpv1alpha1.McpTool, error) {
	var list mcpv1alpha1.McpToolList
	if err := g.Reader.List(ctx, &list, client.InNamespace(id.Namespace)); err != nil {
		return nil, err
	}
	ceiling, err := g.ceiling(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []*mcpv1alpha1.McpTool
	for i := range list.Items {
		t := &list.Items[i]
		if reason, err := g.gate(ctx, id, t, ceiling); err != nil {
			return nil, err
		} else if reason == "" {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Status.LocalName < out[j].Status.LocalName })
	return out, nil
}

func (g *Gateway) ceiling(ctx context.Context, id *Identity) (mcpv1alpha1.DataClass, error) {
	var policies mcpv1alpha1.McpAccessPolicyList
	if err := g.Reader.List(ctx, &policies, client.InNamespace(id.Namespace)); err != nil {
		return "", err
	}
	return ceilingFor(id, policies.Items), nil
}

// gate runs steps 1 to 3 in order and returns the first denial reason, or
// "" when the tool may be listed and called (approval aside).
func (g *Gateway) gate(ctx context.Context, id *Identity, t *mcpv1alpha1.McpTool, ceiling mcpv1alpha1.DataClass) (string, error) {
	if !servable(t) || t.Namespace != id.Namespace || t.Status.LocalName == "" {
		return DenyNotServable, nil
	}
	ok, err := g.Authz.CanCall(ctx, id, t.Namespace, t.Name)
	if err != nil {
		return "", err
	}
	if !ok {
		return DenyForbidden, nil
	}
	if !withinCeiling(t, ceiling) {
		return DenyAboveCeiling, nil
	}
	return "", nil
}

// call decides and makes one tool call.
func (g *Gateway) call(ctx context.Context, req *sdk.CallToolRequest, key types.NamespacedName) (*sdk.CallToolResult, error) {
	log := logf.FromContext(ctx)
	id := identityOf(req.Extra.TokenInfo)
	if id == nil || id.Namespace != key.Namespace {
		return refusal("the caller is not authenticated for this namespace"), nil
	}
	rec := Record{CallID: newCallID(), Caller: id.Username, Namespace: key.Namespace, Tool: key.Name}
	args, argsHash, err := arguments(req.Params.Arguments)
	if err != nil {
		return refusal("the arguments must be a JSON object"), nil
	}
	rec.ArgumentsHash = argsHash

	// The gate is decided again at call time: the tool may have been
	// disabled, drifted or lost its server since the session listed it.
	t := &mcpv1alpha1.McpTool{}
	if err := g.Reader.Get(ctx, key, t); err != nil {
		return g.deny(ctx, rec, nil, DenyNotServable, "", "the tool no longer exists"), nil
	}
	rec.LocalName, rec.Server, rec.DataClass = t.Status.LocalName, t.Spec.ServerRef.Name, string(t.Status.EffectiveDataClass)
	ceiling, err := g.ceiling(ctx, id)
	if err != nil {
		log.Error(err, "gateway: reading access policies failed")
		return refusal("the gateway could not decide on this call; try again"), nil
	}
	reason, err := g.gate(ctx, id, t, ceiling)
	if err != nil {
		log.Error(err, "gateway: authorising a call failed")
		return refusal("the gateway could not decide on this call; try again"), nil
	}
	if reason != "" {
		return g.deny(ctx, rec, t, reason, detailOf(reason, t), denialMessage(reason, t)), nil
	}

	// Step 4: approval, through the client's human.
	rec.Approval = "NotRequired"
	if approvalRequired(t) {
		// A refusal from here on is a refusal of approval, and says so.
		rec.Approval = "Required"
		state := approvalState{Caller: id.UID + "/" + id.Username, Tool: key.String(), Definition: t.Status.DefinitionHash, Arguments: argsHash}
		resp, answered := req.Params.InputResponses[approvalInput]
		if !answered {
			caps := req.ClientCapabilities()
			if caps == nil || caps.Elicitation == nil {
				return g.deny(ctx, rec, t, DenyApprovalNoChannel, "", "this tool needs a human's approval for every call, and this client did not declare the elicitation capability to ask for it; the call was not made"), nil
			}
			state.Expires, state.Nonce = g.now().Add(approvalWindow).Unix(), newNonce()
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{approvalInput: approvalQuestion(t.Status.LocalName, t.Spec.ServerRef.Name, string(t.Status.EffectiveDataClass))},
				RequestState:  g.approver.sign(state),
			}, nil
		}
		if err := g.approver.verify(req.Params.RequestState, state, g.now()); err != nil {
			return g.deny(ctx, rec, t, DenyApprovalDeclined, "", "the approval answer does not belong to this call or has expired; the call was not made"), nil
		}
		if !approved(resp) {
			return g.deny(ctx, rec, t, DenyApprovalDeclined, "", "the call was not approved; it was not made"), nil
		}
		if err := g.approver.spend(req.Params.RequestState, state, g.now()); err != nil {
			msg := "this approval was already used for a call, and every call needs its own; the call was not made"
			if errors.Is(err, errApprovalsFull) {
				msg = "the gateway holds too many recent approvals to take another; try again shortly"
			}
			return g.deny(ctx, rec, t, DenyApprovalDeclined, "", msg), nil
		}
		rec.Approval = "Approved"
	}

	srv := &mcpv1alpha1.McpServer{}
	if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: t.Spec.ServerRef.Name}, srv); err != nil {
		return g.deny(ctx, rec, t, DenyNotServable, mcpv1alpha1.ReasonServerNotFound, "the tool's server no longer exists"), nil
	}

	// No record, no call.
	rec.Decision, rec.Phase, rec.Time = "Allowed", PhaseBefore, g.now()
	if err := g.Audit.Write(ctx, rec); err != nil {
		log.Error(err, "gateway: the audit record could not be written; refusing the call", "tool", key.String())
		metrics.GatewayCalls.WithLabelValues("Denied", DenyAuditFailed).Inc()
		g.event(t, "Warning", "CallRefused", "a call by %s was refused: the audit record could not be written", id.Username)
		return refusal("the call was refused because its audit record could not be written"), nil
	}

	start := g.now()
	out, err := g.send(ctx, srv, t, id, args)
	rec.Phase, rec.Time, rec.LatencyMillis = PhaseAfter, g.now(), g.now().Sub(start).Milliseconds()
	result := &sdk.CallToolResult{}
	switch {
	case err != nil:
		kind := failureKind(err)
		rec.Outcome, rec.ErrorKind = "Failed", string(kind)
		metrics.GatewayCalls.WithLabelValues("Failed", string(kind)).Inc()
		g.event(t, "Warning", "CallFailed", "a call by %s failed: %s", id.Username, kind)
		result.IsError = true
		result.Content = []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("The call to %s failed (%s); the remote server's answer is not shown.", t.Status.LocalName, kind)}}
	case out.IsError:
		rec.Outcome = "ToolError"
		metrics.GatewayCalls.WithLabelValues("ToolError", "").Inc()
		result.IsError = true
		result.Content = []sdk.Content{&sdk.TextContent{Text: out.Text}}
	default:
		rec.Outcome = "Succeeded"
		metrics.GatewayCalls.WithLabelValues("Succeeded", "").Inc()
		result.Content = []sdk.Content{&sdk.TextContent{Text: out.Text}}
	}
	if err := g.Audit.Write(context.WithoutCancel(ctx), rec); err != nil {
		// The call has happened; the before record stands for it.
		log.Error(err, "gateway: the audit outcome record could not be written", "tool", key.String(), "callID", rec.CallID)
	}
	return result, nil
}

func (g *Gateway) send(ctx context.Context, srv *mcpv1alpha1.McpServer, t *mcpv1alpha1.McpTool, id *Identity, args map[string]any) (*mcp.CallOutcome, error) {
	ep, err := g.Upstreams.Call(ctx, srv, credentials.Actor{Username: id.Username, Groups: id.Groups})
	if err != nil {
		return nil, err
	}
	var opts []mcp.CallOption
	if t.Status.InputSchema != nil && len(t.Status.InputSchema.Raw) > 0 {
		// Arguments the schema marks with x-mcp-header travel in headers
		// too, which 2026-07-28 servers require.
		opts = append(opts, mcp.WithInputSchema(t.Status.InputSchema.Raw))
	}
	return g.MCP.CallTool(ctx, ep, t.Spec.RemoteName, args, opts...)
}

// deny records and reports a refusal. Nothing is sent upstream. detail
// refines the reason (for NotServable, the tool's Ready reason).
func (g *Gateway) deny(ctx context.Context, rec Record, t *mcpv1alpha1.McpTool, reason, detail, message string) *sdk.CallToolResult {
	rec.Phase, rec.Decision, rec.Reason, rec.Detail, rec.Time = PhaseDenied, "Denied", reason, detail, g.now()
	if err := g.Audit.Write(ctx, rec); err != nil {
		logf.FromContext(ctx).Error(err, "gateway: the audit record of a refusal could not be written", "reason", reason)
	}
	metrics.GatewayCalls.WithLabelValues("Denied", reason).Inc()
	if t != nil {
		g.event(t, "Warning", "CallRefused", "a call by %s was refused: %s", rec.Caller, reason)
	}
	return refusal(message)
}

func (g *Gateway) event(t *mcpv1alpha1.McpTool, kind, reason, note string, args ...any) {
	if g.Recorder != nil {
		g.Recorder.Eventf(t, nil, kind, reason, "Call", note, args...)
	}
}

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func refusal(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "Refused by the MCP catalog gateway: " + msg}}}
}

// DetailNotInSession refines NotServable: the tool is callable now, but the
// session did not offer it when it began.
const DetailNotInSession = "NotInSession"

// detailOf refines a denial reason: for NotServable, the reason of the
// tool's Ready condition (Disabled, DefinitionChanged, ServerNotReady, …),
// which the tool controller writes from a fixed vocabulary.
func detailOf(reason string, t *mcpv1alpha1.McpTool) string {
	if reason != DenyNotServable {
		return ""
	}
	if !t.Spec.Enabled {
		return mcpv1alpha1.ReasonDisabled
	}
	c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady)
	switch {
	case c == nil:
		return mcpv1alpha1.ReasonNotImported
	case c.ObservedGeneration != t.Generation:
		return mcpv1alpha1.ReasonProgressing
	case c.Status != metav1.ConditionTrue:
		return c.Reason
	}
	return ""
}

func denialMessage(reason string, t *mcpv1alpha1.McpTool) string {
	switch reason {
	case DenyForbidden:
		return "the caller is not allowed to call this tool (RBAC verb \"call\" on mcptools)"
	case DenyAboveCeiling:
		return "the tool's data class is above the caller's ceiling (McpAccessPolicy)"
	}
	msg := "the tool is not servable now"
	switch detailOf(reason, t) {
	case mcpv1alpha1.ReasonDisabled:
		msg += ": it is disabled"
	case mcpv1alpha1.ReasonDefinitionChanged:
		msg += ": its definition changed since it was approved"
	case mcpv1alpha1.ReasonServerNotReady, mcpv1alpha1.ReasonServerNotFound:
		msg += ": its server is not Ready (unreachable, or not yet probed)"
	case mcpv1alpha1.ReasonRemovedFromServer:
		msg += ": its server no longer offers it"
	case "":
	default:
		msg += " (" + detailOf(reason, t) + ")"
	}
	return msg
}

// arguments decodes the call's arguments and hashes their canonical form.
func arguments(raw any) (map[string]any, string, error) {
	var m map[string]any
	switch v := raw.(type) {
	case nil:
		m = map[string]any{}
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			m = map[string]any{}
		} else if err := decodeObject(v, &m); err != nil || m == nil {
			return nil, "", errors.New("arguments are not an object")
		}
	case map[string]any:
		m = v
	default:
		b, err := json.Marshal(v)
		if err != nil || decodeObject(b, &m) != nil || m == nil {
			return nil, "", errors.New("arguments are not an object")
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return m, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// decodeObject decodes a JSON object keeping numbers as written
// (json.Number): a float64 would change an integer id above 2^53 on its way
// upstream.
func decodeObject(b []byte, m *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(m); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the arguments")
	}
	return nil
}

func newCallID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// readTimeout bounds each read of the gateway from the cache.
const readTimeout = 5 * time.Second

// boundedReader gives every read a deadline.
type boundedReader struct {
	client.Reader
	timeout time.Duration
}

func (r boundedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r boundedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.Reader.List(ctx, list, opts...)
}

// failureKind names why a call failed with a fixed word: the MCP client's
// error kind, or why no credential could be had (an unmapped or disabled
// actor, a refused token exchange, a missing Secret).
func failureKind(err error) mcp.Kind {
	var de *credentials.DelegationError
	var me *credentials.MissingError
	switch {
	case mcp.KindOf(err) != "":
		return mcp.KindOf(err)
	case errors.As(err, &de):
		return mcp.Kind(de.Reason)
	case errors.As(err, &me):
		return mcp.Kind(me.Reason)
	default:
		return "CredentialUnavailable"
	}
}
