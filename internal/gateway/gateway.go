package gateway

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/gateway/budget"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/guardrail"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/oauthresource"
	"github.com/mcp-catalog/operator/internal/toolview"
)

// Path is where the gateway serves MCP to a ServiceAccount, for its own
// namespace.
const Path = authn.Path

// NamespacedPath is where the gateway serves MCP for one namespace, named
// in the path: the endpoint of a person's agent, whose identity has no
// namespace (ADR 053). A ServiceAccount may use its own namespace's.
const NamespacedPath = "/" + authn.NamespaceSegment + "/{" + authn.PathNamespace + "}" + Path

// Upstreams returns the endpoint a call made for actor is sent to, with its
// credential resolved (upstream.Endpoints).
type Upstreams interface {
	Call(ctx context.Context, srv *mcpv1alpha1.McpServer, actor credentials.Actor) (mcp.Endpoint, error)
}

// Options are what a Gateway is built from. Reader, Authn, Authz,
// Upstreams, MCP, Audit and Recorder are required.
type Options struct {
	// Reader reads McpTools, McpServers and McpAccessPolicies (the cache).
	Reader client.Reader
	// Informers, when set, are the informers Reader reads from (the
	// manager's cache): the reads of a call's path go to their stores
	// directly (reader.go). nil reads everything through Reader.
	Informers cache.Informers
	Authn     authn.Authenticator
	// OAuth validates the OAuth access tokens of people and agents outside
	// the cluster (docs/gateway-oauth.md); nil accepts ServiceAccount
	// tokens only.
	OAuth     *oauthresource.Validator
	Authz     authz.Authorizer
	Upstreams Upstreams
	MCP       *mcp.Client
	Audit     audit.Sink
	// Recorder emits Events on McpTools for refusals, failures and
	// approvals requested.
	Recorder events.EventRecorder
	// Version is reported to clients.
	Version string
	// ApprovalKeys sign approval state and seal McpCallApprovals; they
	// must be the same on every replica (approvals.SecretKeys). Nil means a random
	// key per process, which is fine for one process in development.
	ApprovalKeys approvals.KeySource
	// Approvals reads, creates and uses McpCallApprovals, straight from the
	// API server (not a cache). Nil refuses every call that needs a
	// person's approval.
	Approvals client.Client
	// Marks reads and writes McpReadMarks straight at the API server, for
	// the write-down rule (writedown.go); the Reader's cache answers
	// first. Nil withholds every result that would raise a mark.
	Marks client.Client
	// ApprovalPolicy names the ValidatingAdmissionPolicy that keeps a caller
	// from deciding its own McpCallApproval and a decider from forging
	// decidedBy (config/policy, the chart). When set, calls that need a
	// person's approval are refused while that policy, or a binding of it
	// that denies, is missing: without them an approval proves nothing.
	// Empty checks nothing (development).
	ApprovalPolicy string
	// ApprovalTTL is how long an McpCallApproval can be decided and used;
	// 0 means DefaultApprovalTTL.
	ApprovalTTL time.Duration
	// ApprovalURL is the URL of an approval a URL elicitation shows the
	// agent's user; nil names the object in the Kubernetes API.
	ApprovalURL func(namespace, name string) string
	// Stateless serves the initialize era without sessions kept in this
	// process, as the 2026-07-28 era always is, so that any replica answers
	// any request of a session (docs/adr/015-gateway-deployment.md). Such a
	// session cannot carry requests from the gateway to the client, so
	// approval asked through the agent's own client works only in the
	// 2026-07-28 era.
	Stateless bool
	// UnauthenticatedRate and UnauthenticatedBurst limit, per presented
	// token, requests whose token failed its review; zero means the
	// defaults.
	UnauthenticatedRate  rate.Limit
	UnauthenticatedBurst int
	// DenialWindow is how long repeats of one denial (caller, tool,
	// reason) are aggregated into one audit record; 0 means
	// DefaultDenialWindow. Run a DenialFlusher to write the last window's.
	DenialWindow time.Duration
	// Budgets bound the requests of each ServiceAccount and each
	// namespace (internal/gateway/budget); zero fields take the defaults.
	Budgets budget.Budgets
	// ListTTL is the ttlMs of every list result (how long an agent may use
	// a tools/list result without asking again); 0 means DefaultListTTL.
	ListTTL time.Duration
	// TracerProvider, if set, traces every tools/call: a server span per
	// call, the upstream call a client span under it, and W3C trace
	// context sent upstream. Nil traces nothing and propagates nothing.
	TracerProvider trace.TracerProvider
	// ServableIndex says that the Reader indexes McpTools by IndexTools:
	// a list then reads only the tools that can be listed.
	ServableIndex bool
	// ListCacheBytes bounds the encoded tools kept for lists; 0 means
	// DefaultListCacheBytes.
	ListCacheBytes int
	// MaxRequestBytes bounds the body of a request; a larger one is
	// answered 413 before any of it is decoded. 0 means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxTasksPerIdentity bounds the tasks one identity may have open on
	// a replica (tasks.go); 0 means DefaultMaxTasksPerIdentity.
	MaxTasksPerIdentity int
	// MaxRequestBytesInFlight bounds the request bytes a replica holds at
	// once, each namespace at most half of it; 0 means a quarter of the
	// process's memory limit (GOMEMLIMIT) when one is set, else 64 MiB.
	MaxRequestBytesInFlight int64
	// Namespaces are the namespaces this gateway serves, those its Reader
	// caches (the manager's watch namespaces); empty serves every
	// namespace. A caller of another namespace is answered 421 before any
	// work (pool.go).
	Namespaces []string
	// SharingTrust is whose word a sharing namespace selector takes (ADR
	// 046): the same as the controllers', so that the gateway grants what
	// their conditions report. The zero value trusts every key.
	SharingTrust governance.SelectorTrust
	// Guardrail, when not nil, is asked about every call before it is sent
	// and about its result before the agent reads it (guardrail.go).
	// GuardrailFailClosedFrom is the lowest data class whose calls are
	// refused while it gives no answer; below it calls go on without it.
	// Empty: Confidential.
	Guardrail               *guardrail.Client
	GuardrailFailClosedFrom mcpv1alpha1.DataClass
	// PublicURL is the gateway's MCP endpoint as agents reach it (e.g.
	// https://mcp.example.com/mcp). When set, the catalog each caller may
	// call is also served as a read-only MCP Registry at RegistryPath,
	// every entry naming this one endpoint (docs/registry.md); empty
	// serves no registry.
	PublicURL string
	// PersonAuth holds people's authorizations of per-person servers and
	// serves the callback of their consent (ADR 056); nil refuses calls of
	// per-person servers.
	PersonAuth *personauth.Authorizer
	// Clock is the gateway's clock; nil is the real one.
	Clock clock.PassiveClock
}

// Gateway is the MCP endpoint agents call. New builds it complete; it is
// not changed afterwards.
type Gateway struct {
	Options

	approver     approvals.Approver
	approvalKeys approvals.KeySource
	admission    *approvals.AdmissionGuard
	// identifier is the first stage: who calls (internal/gateway/authn).
	identifier *authn.Identifier
	budgets    *budget.Budgeter
	denials    *audit.Denials
	handler    http.Handler
	servers    toolServers
	// lists holds the bytes each version of a tool is listed as
	// (listfast.go).
	lists listCache
	// listPrefix and eraListPrefix open the result of a tools/list
	// answer of 2026-07-28 and of the initialize era (listfast.go).
	listPrefix, eraListPrefix []byte
	// initialized holds the result of an initialize, per revision
	// (wire.go).
	initialized map[string][]byte
	// discovered holds the result of server/discover without and with
	// listChanged (wire.go).
	discovered [2][]byte
	// eraAnswers counts the requests of the initialize era the front door
	// answered; noInitializeEra leaves them all to the SDK (tests compare
	// the two).
	eraAnswers      atomic.Int64
	noInitializeEra atomic.Bool
	// inflight bounds the request bytes held at once (wire.go).
	inflight *budget.InFlight
	// calls are the initialize era's calls in flight without sessions,
	// for their callers' cancellations (cancel.go).
	calls inflightCalls
	// tasks are the tasks made on this replica and not seen to end, per
	// identity (tasks.go).
	tasks openTasks
	// parked are the calls waiting for a 2026-07-28 caller's answer to
	// their server's request (parked.go).
	parked parkedCalls
	// asks are the requests to agents without sessions waiting for their
	// answers (streamask.go).
	asks pendingAsks
	// textResultPrefix opens the result of a call answered with one text
	// block (callfast.go).
	textResultPrefix []byte
	// fastLists counts the lists answered by serveList; noFastList leaves
	// every list to the SDK (tests compare the two).
	fastLists  atomic.Int64
	noFastList atomic.Bool
	// fastCalls counts the calls answered by serveCall; noFastCall leaves
	// every call to the SDK (tests compare the two).
	fastCalls  atomic.Int64
	noFastCall atomic.Bool
	// views is what agents see of each version of each tool (rules.go).
	views toolview.Cache
	// sharedRules are the rules consuming namespaces add to shared tools,
	// compiled once per version of each McpSharedServer (rules.go).
	sharedRules toolview.SharedCache
	// tracer is nil when tracing is off.
	tracer trace.Tracer
	// changes are the sessions and listen streams told when what their
	// caller may see changes (changes.go).
	changes *changes
	// unservedOwners are the shared servers already logged as naming a
	// namespace this gateway does not serve (pool.go).
	unservedOwners reportedOnce
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

// The Events the gateway records on McpTools (docs/gateway.md, section 7)
// are of this action, for one of these reasons. The note says who called;
// never what with.
const (
	eventAction = "Call"

	// EventCallRefused (Warning): a call was refused; the note gives the
	// refusal reason.
	EventCallRefused = "CallRefused"
	// EventCallFailed (Warning): a call was sent and failed; the note gives
	// the failure kind.
	EventCallFailed = "CallFailed"
	// EventApprovalRequested (Normal): a call waits for a person's decision
	// on the McpCallApproval the note names.
	EventApprovalRequested = "ApprovalRequested"
)

func (g *Gateway) now() time.Time { return realOr(g.Clock).Now() }

// realOr is c, or the real clock when c is nil (a clock a test did not
// set).
func realOr(c clock.PassiveClock) clock.PassiveClock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}

// reportedOnce remembers what was logged, so that a misconfiguration every
// list meets is logged once per process, not once per list. It is bounded:
// past maxReported entries it starts again.
type reportedOnce struct {
	mu   sync.Mutex
	seen map[[3]string]struct{}
}

const maxReported = 1000

func (r *reportedOnce) report(a, b, c string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [3]string{a, b, c}
	if _, ok := r.seen[k]; ok {
		return false
	}
	if r.seen == nil || len(r.seen) >= maxReported {
		r.seen = map[[3]string]struct{}{}
	}
	r.seen[k] = struct{}{}
	return true
}
