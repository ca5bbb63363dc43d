package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/authz"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/inspect"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// Prompts and resources (docs/adr/065-prompts-and-resources.md). Every
// server the gateway hands the go-sdk answers prompts/list, prompts/get,
// resources/list, resources/templates/list and resources/read here, for
// the request's caller, from the McpPrompts and McpResources of its
// namespace as the cache holds them now: an object is offered and used
// only while it is enabled, its definition is the approved one and was
// offered at the last import, RBAC grants the caller the verb on it (call
// on mcpprompts, read on mcpresources), its server exists and its data
// class is within the caller's ceiling. A get or a read is audited before
// it is sent and after, like a call; lists are not.

// Methods answered here.
const (
	methodPromptsList       = "prompts/list"
	methodPromptsGet        = "prompts/get"
	methodResourcesList     = "resources/list"
	methodTemplatesList     = "resources/templates/list"
	methodResourcesRead     = "resources/read"
	methodInitializeRequest = "initialize"
)

// Reasons and refusal answers of prompts and resources, beside those of
// calls.
const (
	// DenyResultTooLarge: a resources/read result was larger than the
	// McpResource's spec.maxReadBytes.
	DenyResultTooLarge = "ResultTooLarge"
	// DenyContentChanged: a ui:// resource's content is not the content
	// whose hash was approved.
	DenyContentChanged = "ContentChanged"
	// DenyAmbiguous: more than one servable resource of the namespace has
	// the URI.
	DenyAmbiguous = "Ambiguous"
	// DenyUnknownArgument: a prompts/get named an argument the approved
	// definition does not have.
	DenyUnknownArgument = "UnknownArgument"
)

// featureEffects are what getting a prompt and reading a resource do: read,
// nothing more. The caller's ceiling for read-only work applies.
var featureEffects = governance.Effects{Reviewed: true, ReadOnly: true, Idempotent: true}

// featureMiddleware answers the methods of prompts and resources on a
// server the gateway hands the go-sdk, and adds the prompts and resources
// capabilities to an initialize or server/discover result when the
// caller's namespace has an enabled McpPrompt or McpResource.
func (g *Gateway) featureMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case methodInitializeRequest, methodDiscover, methodPromptsList, methodPromptsGet, methodResourcesList, methodTemplatesList, methodResourcesRead:
		default:
			return next(ctx, method, req)
		}
		var id *authn.Identity
		if extra := req.GetExtra(); extra != nil {
			id = authn.IdentityOf(extra.TokenInfo)
		}
		if method == methodInitializeRequest || method == methodDiscover {
			res, err := next(ctx, method, req)
			var caps *sdk.ServerCapabilities
			switch r := res.(type) {
			case *sdk.InitializeResult:
				caps = r.Capabilities
			case *sdk.DiscoverResult:
				caps = r.Capabilities
			}
			if caps != nil && err == nil && id != nil && g.featuresEnabled(ctx, id.Namespace) {
				caps.Prompts = &sdk.PromptCapabilities{}
				caps.Resources = &sdk.ResourceCapabilities{}
			}
			if err == nil {
				// Tasks are the front door's in every mode (tasks.go).
				res = declareTasks(res)
			}
			return res, err
		}
		if id == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the caller is not identified"}
		}
		f := &featureScope{g: g, id: id, servers: map[types.NamespacedName]*mcpv1alpha1.McpServer{}}
		if extra := req.GetExtra(); extra != nil {
			f.header = extra.Header
		}
		if r, ok := req.(interface {
			ClientCapabilities() *sdk.ClientCapabilities
		}); ok {
			caps := r.ClientCapabilities()
			f.urlElicitation = caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
		}
		res, err := f.serve(ctx, method, req)
		var undecided *undecidedError
		if errors.As(err, &undecided) {
			logging.FromContext(ctx, logging.Gateway).Error(undecided.err, "deciding on prompts or resources failed")
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: undecidedMessage}
		}
		return res, err
	}
}

// undecidedError is a failure to decide (a read or a review failed), told
// to the agent as such, never as a refusal.
type undecidedError struct{ err error }

func (e *undecidedError) Error() string { return e.err.Error() }

// featuresEnabled reports whether namespace has an enabled McpPrompt or
// McpResource; a failed read says no.
func (g *Gateway) featuresEnabled(ctx context.Context, namespace string) bool {
	var prompts mcpv1alpha1.McpPromptList
	if g.Reader.List(ctx, &prompts, client.InNamespace(namespace), readOnly) == nil {
		for i := range prompts.Items {
			if prompts.Items[i].Spec.Enabled {
				return true
			}
		}
	}
	var resources mcpv1alpha1.McpResourceList
	if g.Reader.List(ctx, &resources, client.InNamespace(namespace), readOnly) == nil {
		for i := range resources.Items {
			if resources.Items[i].Spec.Enabled {
				return true
			}
		}
	}
	return false
}

// featureScope is one request's decisions: its caller, the caller's
// ceiling once read, and the servers read.
type featureScope struct {
	g       *Gateway
	id      *authn.Identity
	ceiling *mcpv1alpha1.DataClass
	// policies are the access policies of the caller's namespace, read
	// with the ceiling.
	policies []mcpv1alpha1.McpAccessPolicy
	servers  map[types.NamespacedName]*mcpv1alpha1.McpServer
	allowAll map[string]*bool
	// header is the request's, whose bearer token a person presented is
	// the subject token of a delegation that takes the caller's
	// (featureauth.go); urlElicitation says the client takes a consent
	// link as a URL elicitation.
	header         http.Header
	urlElicitation bool
}

func (f *featureScope) serve(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
	switch method {
	case methodPromptsList:
		return f.listPrompts(ctx)
	case methodPromptsGet:
		r, ok := req.(*sdk.ServerRequest[*sdk.GetPromptParams])
		if !ok || r.Params == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get needs params"}
		}
		return f.getPrompt(ctx, r.Params)
	case methodResourcesList:
		return f.listResources(ctx)
	case methodTemplatesList:
		return f.listTemplates(ctx)
	default:
		r, ok := req.(*sdk.ServerRequest[*sdk.ReadResourceParams])
		if !ok || r.Params == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read needs params"}
		}
		return f.readResource(ctx, r.Params.URI)
	}
}

// featureVerdict is the decision on one object for the caller: allowed
// (reason empty), with its effective class and its server, or refused.
type featureVerdict struct {
	reason, detail string
	class          mcpv1alpha1.DataClass
	server         *mcpv1alpha1.McpServer
}

// featureState is what the decision reads of an McpPrompt or McpResource.
type featureState struct {
	namespace, name, server string
	enabled                 bool
	approved, current       string
	imported                bool
	dataClass               mcpv1alpha1.DataClass
	// textInvalid is set when the reviewed text names an argument the
	// definition does not have.
	textInvalid bool
}

func promptState(p *mcpv1alpha1.McpPrompt) featureState {
	return featureState{namespace: p.Namespace, name: p.Name, server: p.Spec.ServerRef.Name, enabled: p.Spec.Enabled,
		approved: p.Spec.ApprovedDefinitionHash, current: p.Status.DefinitionHash,
		imported: meta.IsStatusConditionTrue(p.Status.Conditions, mcpv1alpha1.ConditionImported), dataClass: p.Spec.DataClass,
		textInvalid: !p.ReviewedTextValid()}
}

// promptView is what agents read of a prompt: the reviewed text where the
// spec sets it, and once it is set no argument description of the
// server's that it does not replace.
func promptView(p *mcpv1alpha1.McpPrompt) *sdk.Prompt {
	sp := &sdk.Prompt{Name: p.Status.LocalName, Title: p.Status.Title, Description: p.Status.Description}
	rt := p.Spec.ReviewedText
	reviewed := map[string]string{}
	if rt != nil {
		if rt.Title != "" {
			sp.Title = rt.Title
		}
		if rt.Description != "" {
			sp.Description = rt.Description
		}
		for _, a := range rt.Arguments {
			reviewed[a.Name] = a.Description
		}
	}
	for _, a := range p.Status.Arguments {
		arg := &sdk.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required}
		if rt != nil {
			arg.Title, arg.Description = "", reviewed[a.Name]
		}
		sp.Arguments = append(sp.Arguments, arg)
	}
	return sp
}

// resourceText is the title and description agents read of a resource:
// the reviewed text where the spec sets it.
func resourceText(r *mcpv1alpha1.McpResource) (title, description string) {
	title, description = r.Status.Title, r.Status.Description
	if rt := r.Spec.ReviewedText; rt != nil {
		if rt.Title != "" {
			title = rt.Title
		}
		if rt.Description != "" {
			description = rt.Description
		}
	}
	return title, description
}

func resourceState(r *mcpv1alpha1.McpResource) featureState {
	return featureState{namespace: r.Namespace, name: r.Name, server: r.Spec.ServerRef.Name, enabled: r.Spec.Enabled,
		approved: r.Spec.ApprovedDefinitionHash, current: r.Status.DefinitionHash,
		imported: meta.IsStatusConditionTrue(r.Status.Conditions, mcpv1alpha1.ConditionImported), dataClass: r.Spec.DataClass}
}

// verdict decides one object, in the order of verdictFor: RBAC first, so
// that a caller the object is not for learns nothing of it; then servable
// (enabled, approved, offered); then its server and the ceiling.
func (f *featureScope) verdict(ctx context.Context, resource, verb string, s featureState) (featureVerdict, error) {
	if s.namespace != f.id.Namespace {
		return featureVerdict{reason: audit.DenyForbidden}, nil
	}
	ok, err := f.canUse(ctx, resource, verb, s.name)
	if err != nil {
		return featureVerdict{}, &undecidedError{fmt.Errorf("authorising: %w", err)}
	}
	if !ok {
		return featureVerdict{reason: audit.DenyForbidden}, nil
	}
	switch {
	case !s.enabled:
		return featureVerdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonDisabled}, nil
	case s.approved == "":
		return featureVerdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonDefinitionNotApproved}, nil
	case s.approved != s.current:
		return featureVerdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonDefinitionChanged}, nil
	case !s.imported:
		return featureVerdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonRemovedFromServer}, nil
	case s.textInvalid:
		return featureVerdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonReviewedTextInvalid}, nil
	}
	srv, err := f.g.readServer(ctx, types.NamespacedName{Namespace: s.namespace, Name: s.server}, f.servers)
	if err != nil {
		return featureVerdict{}, &undecidedError{err}
	}
	if srv == nil {
		return featureVerdict{reason: audit.DenyNotServable, detail: mcpv1alpha1.ReasonServerNotFound}, nil
	}
	class := srv.Spec.DataClass
	if s.dataClass != "" {
		class = mcpv1alpha1.MaxDataClass(class, s.dataClass)
	}
	ceiling, err := f.ceilingFor(ctx)
	if err != nil {
		return featureVerdict{}, &undecidedError{err}
	}
	if !class.Valid() || !governance.WithinCeiling(class, ceiling) {
		return featureVerdict{reason: audit.DenyAboveCeiling, class: class}, nil
	}
	return featureVerdict{class: class, server: srv}, nil
}

// canUse is RBAC for verb on resource: a grant of every object of the
// namespace (one review, remembered for the request), else the object's
// own review. An authorizer that cannot tell allows nothing.
func (f *featureScope) canUse(ctx context.Context, resource, verb, name string) (bool, error) {
	fa, ok := f.g.Authz.(authz.FeatureAuthorizer)
	if !ok {
		return false, nil
	}
	if f.allowAll == nil {
		f.allowAll = map[string]*bool{}
	}
	all := f.allowAll[resource]
	if all == nil {
		ok, err := fa.CanUse(ctx, f.id, f.id.Namespace, resource, verb, "")
		if err != nil {
			return false, err
		}
		all = &ok
		f.allowAll[resource] = all
	}
	if *all {
		return true, nil
	}
	return fa.CanUse(ctx, f.id, f.id.Namespace, resource, verb, name)
}

// ceilingFor is the caller's ceiling for read-only work, read once.
func (f *featureScope) ceilingFor(ctx context.Context) (mcpv1alpha1.DataClass, error) {
	if f.ceiling == nil {
		policies, err := f.g.accessPolicies(ctx, f.id)
		if err != nil {
			return "", err
		}
		limit := ceilingFor(f.id, policies).For(featureEffects)
		f.ceiling, f.policies = &limit, policies
	}
	return *f.ceiling, nil
}

// prompts are the McpPrompts of the caller's namespace.
func (f *featureScope) prompts(ctx context.Context) ([]mcpv1alpha1.McpPrompt, error) {
	var l mcpv1alpha1.McpPromptList
	if err := f.g.Reader.List(ctx, &l, client.InNamespace(f.id.Namespace), readOnly); err != nil {
		return nil, &undecidedError{fmt.Errorf("listing McpPrompts: %w", err)}
	}
	return l.Items, nil
}

// resources are the McpResources of the caller's namespace.
func (f *featureScope) resources(ctx context.Context) ([]mcpv1alpha1.McpResource, error) {
	var l mcpv1alpha1.McpResourceList
	if err := f.g.Reader.List(ctx, &l, client.InNamespace(f.id.Namespace), readOnly); err != nil {
		return nil, &undecidedError{fmt.Errorf("listing McpResources: %w", err)}
	}
	return l.Items, nil
}

func (f *featureScope) listPrompts(ctx context.Context) (*sdk.ListPromptsResult, error) {
	items, err := f.prompts(ctx)
	if err != nil {
		return nil, err
	}
	out := &sdk.ListPromptsResult{Prompts: []*sdk.Prompt{}}
	for i := range items {
		p := &items[i]
		if !p.Spec.Enabled {
			// Not servable: no review spent on it.
			continue
		}
		v, err := f.verdict(ctx, authz.ResourcePrompts, authz.VerbCall, promptState(p))
		if err != nil {
			return nil, err
		}
		if v.reason != "" || p.Status.LocalName == "" {
			continue
		}
		out.Prompts = append(out.Prompts, promptView(p))
	}
	sort.Slice(out.Prompts, func(i, j int) bool { return out.Prompts[i].Name < out.Prompts[j].Name })
	return out, nil
}

// servableResources are the caller's servable resources (templates when
// templates is true), a URI two of them share left out.
func (f *featureScope) servableResources(ctx context.Context, templates bool) ([]*mcpv1alpha1.McpResource, error) {
	items, err := f.resources(ctx)
	if err != nil {
		return nil, err
	}
	var kept []*mcpv1alpha1.McpResource
	seen := map[string]int{}
	for i := range items {
		r := &items[i]
		if !r.Spec.Enabled || (r.Spec.URITemplate != "") != templates {
			continue
		}
		v, err := f.verdict(ctx, authz.ResourceResources, authz.VerbRead, resourceState(r))
		if err != nil {
			return nil, err
		}
		if v.reason == "" {
			kept = append(kept, r)
			seen[uriOf(r)]++
		}
	}
	out := kept[:0]
	for _, r := range kept {
		if seen[uriOf(r)] == 1 {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return uriOf(out[i]) < uriOf(out[j]) })
	return out, nil
}

func uriOf(r *mcpv1alpha1.McpResource) string {
	if r.Spec.URITemplate != "" {
		return r.Spec.URITemplate
	}
	return r.Spec.URI
}

func (f *featureScope) listResources(ctx context.Context) (*sdk.ListResourcesResult, error) {
	rs, err := f.servableResources(ctx, false)
	if err != nil {
		return nil, err
	}
	out := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	for _, r := range rs {
		title, description := resourceText(r)
		out.Resources = append(out.Resources, &sdk.Resource{URI: r.Spec.URI, Name: r.Status.Name, Title: title, Description: description, MIMEType: r.Status.MimeType})
	}
	return out, nil
}

func (f *featureScope) listTemplates(ctx context.Context) (*sdk.ListResourceTemplatesResult, error) {
	rs, err := f.servableResources(ctx, true)
	if err != nil {
		return nil, err
	}
	out := &sdk.ListResourceTemplatesResult{ResourceTemplates: []*sdk.ResourceTemplate{}}
	for _, r := range rs {
		title, description := resourceText(r)
		out.ResourceTemplates = append(out.ResourceTemplates, &sdk.ResourceTemplate{URITemplate: r.Spec.URITemplate, Name: r.Status.Name, Title: title, Description: description, MIMEType: r.Status.MimeType})
	}
	return out, nil
}

// unknownPrompt is the one answer to a prompts/get refused before RBAC
// allowed it, or of no such prompt.
const unknownPrompt = "there is no prompt of this name that the caller may get (RBAC verb \"call\" on mcpprompts)"

func (f *featureScope) getPrompt(ctx context.Context, p *sdk.GetPromptParams) (sdk.Result, error) {
	g := f.g
	rec := audit.Record{CallID: audit.NewCallID(), Caller: f.id.Username, Namespace: f.id.Namespace, Method: methodPromptsGet, ArgumentsHash: promptArgumentsHash(p.Arguments)}
	unknown := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: unknownPrompt}
	name, err := toolname.ObjectNameOfLocal(p.Name)
	if err != nil {
		g.featureDenial(ctx, rec, audit.DenyNotServable, "")
		return nil, unknown
	}
	rec.Tool = name
	var pr mcpv1alpha1.McpPrompt
	if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: f.id.Namespace, Name: name}, &pr, readOnly); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, &undecidedError{err}
		}
		g.featureDenial(ctx, rec, audit.DenyNotServable, "")
		return nil, unknown
	}
	v, err := f.verdict(ctx, authz.ResourcePrompts, authz.VerbCall, promptState(&pr))
	if err != nil {
		return nil, err
	}
	rec.LocalName, rec.Server, rec.DataClass = pr.Status.LocalName, pr.Spec.ServerRef.Name, string(v.class)
	switch {
	case v.reason == audit.DenyForbidden:
		g.featureDenial(ctx, rec, v.reason, "")
		return nil, unknown
	case v.reason != "":
		g.featureDenial(ctx, rec, v.reason, v.detail)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: featureRefusal("prompt", v)}
	case pr.Status.LocalName != p.Name:
		g.featureDenial(ctx, rec, audit.DenyNotServable, "")
		return nil, unknown
	}
	known := map[string]bool{}
	for _, a := range pr.Status.Arguments {
		known[a.Name] = true
	}
	for k := range p.Arguments {
		if !known[k] {
			g.featureDenial(ctx, rec, DenyUnknownArgument, "")
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the prompt has no argument of one of the names sent"}
		}
	}
	// The arguments go to the server as a call's do: the guardrail is
	// asked about them first (guardrail.go).
	if err := g.guardPromptArguments(ctx, f.id, &rec, p.Arguments); err != nil {
		return nil, err
	}
	return f.send(ctx, &rec, v.server, false, func(ep mcp.Endpoint) (json.RawMessage, error) {
		return g.MCP.GetPrompt(ctx, ep, pr.Spec.RemoteName, p.Arguments)
	}, func(c *callScope, raw json.RawMessage) (sdk.Result, error) {
		return f.screenPrompt(ctx, c, raw, pr.Spec.ReviewedText)
	})
}

// screenPrompt is what the agent gets of a prompts/get answer: its
// messages' contents (and the server's description, a text too) screened
// as the blocks of a tool's result are, by readable. A message keeps its
// role; the gateway's notes lead the messages as the user's. The
// server's _meta, of the result and of each block, is dropped, as a tool
// result's is: nothing screens it.
func (f *featureScope) screenPrompt(ctx context.Context, c *callScope, raw json.RawMessage, rt *mcpv1alpha1.PromptReviewedText) (sdk.Result, error) {
	in := &sdk.GetPromptResult{}
	if err := json.Unmarshal(raw, in); err != nil {
		c.rec.Outcome, c.rec.ErrorKind = audit.OutcomeFailed, string(mcp.KindInvalidResponse)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's answer is not a prompt"}
	}
	out := &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{}}
	t := &typedResult{}
	var description sdk.Content
	if rt != nil {
		// The result's description is the server's text about the
		// prompt: once people reviewed it, theirs.
		out.Description = rt.Description
	} else if in.Description != "" {
		description = &sdk.TextContent{Text: in.Description}
		t.content = append(t.content, description)
	}
	roles := map[sdk.Content]sdk.Role{}
	other := 0
	for _, m := range in.Messages {
		if m == nil || m.Content == nil || !stripMeta(m.Content) {
			other++
			continue
		}
		roles[m.Content] = m.Role
		t.content = append(t.content, m.Content)
	}
	if other > 0 {
		t.content = append([]sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("[Note: %d message(s) of a kind prompts do not carry dropped.]", other)}}, t.content...)
	}
	res, err := f.readable(ctx, c, t)
	if err != nil {
		return nil, err
	}
	for _, b := range res.Content {
		role, ok := roles[b]
		switch {
		case b == description:
			out.Description = description.(*sdk.TextContent).Text
		case ok:
			out.Messages = append(out.Messages, &sdk.PromptMessage{Role: role, Content: b})
		default:
			// The gateway's note, or the guardrail's replacement.
			out.Messages = append(out.Messages, &sdk.PromptMessage{Role: "user", Content: b})
		}
	}
	return out, nil
}

// resourceNotFound is the answer to a read of a URI the caller may not read, or
// no servable resource has: the spec's resource-not-found error, the same
// whatever the reason.
func resourceNotFound(uri string) error { return sdk.ResourceNotFoundError(uri) }

func (f *featureScope) readResource(ctx context.Context, uri string) (sdk.Result, error) {
	g := f.g
	sum := sha256.Sum256([]byte(uri))
	rec := audit.Record{CallID: audit.NewCallID(), Caller: f.id.Username, Namespace: f.id.Namespace, Method: methodResourcesRead, ArgumentsHash: "sha256:" + hex.EncodeToString(sum[:])}
	if !mcp.ValidURI(uri) {
		g.featureDenial(ctx, rec, audit.DenyNotServable, "")
		return nil, resourceNotFound("")
	}
	items, err := f.resources(ctx)
	if err != nil {
		return nil, err
	}
	// The object the URI names: a resource of that URI, else a template
	// it matches; the decision on it (an allowed one wins over refused
	// ones, two allowed ones make it ambiguous).
	var (
		chosen  *mcpv1alpha1.McpResource
		verdict featureVerdict
		allowed int
	)
	for _, templates := range []bool{false, true} {
		for i := range items {
			r := &items[i]
			if (r.Spec.URITemplate != "") != templates || (!templates && r.Spec.URI != uri) || (templates && !templateMatches(r.Spec.URITemplate, uri)) {
				continue
			}
			v, err := f.verdict(ctx, authz.ResourceResources, authz.VerbRead, resourceState(r))
			if err != nil {
				return nil, err
			}
			if v.reason == "" {
				allowed++
			}
			if chosen == nil || (v.reason == "" && verdict.reason != "") || (verdict.reason == audit.DenyForbidden && v.reason != "") {
				chosen, verdict = r, v
			}
		}
		if allowed > 0 {
			break
		}
	}
	if chosen == nil {
		g.featureDenial(ctx, rec, audit.DenyNotServable, "")
		return nil, resourceNotFound(uri)
	}
	rec.Tool, rec.Server, rec.DataClass = chosen.Name, chosen.Spec.ServerRef.Name, string(verdict.class)
	switch {
	case verdict.reason == audit.DenyForbidden:
		g.featureDenial(ctx, rec, verdict.reason, "")
		return nil, resourceNotFound(uri)
	case verdict.reason != "":
		g.featureDenial(ctx, rec, verdict.reason, verdict.detail)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: featureRefusal("resource", verdict)}
	case allowed > 1:
		g.featureDenial(ctx, rec, DenyAmbiguous, "")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "more than one server of this namespace offers this URI; none of them is served"}
	}
	app := chosen.Status.App
	if app && (chosen.Spec.URITemplate != "" || chosen.Status.ContentHash == "") {
		g.featureDenial(ctx, rec, DenyContentChanged, "")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the app's content was not read at import, so none of it is approved"}
	}
	bound := mcpv1alpha1.DefaultMaxReadBytes
	if chosen.Spec.MaxReadBytes != nil {
		bound = *chosen.Spec.MaxReadBytes
	}
	return f.send(ctx, &rec, verdict.server, app, func(ep mcp.Endpoint) (json.RawMessage, error) {
		raw, err := g.MCP.ReadResource(ctx, ep, uri, bound)
		if err != nil {
			return nil, err
		}
		if digest, ok := mcp.ContentDigest(raw); app && (!ok || digest != chosen.Status.ContentHash) {
			return nil, errContentChanged
		}
		return raw, nil
	}, func(c *callScope, raw json.RawMessage) (sdk.Result, error) {
		return f.screenRead(ctx, c, raw, uri)
	})
}

var errContentChanged = errors.New("the app's content is not the approved content")

// screenRead is what the agent gets of a resources/read answer: each of
// its contents screened as the same content embedded in a tool's result
// is (its text and URI inspected, its blob under the content-type rule),
// by readable, so that a server cannot pass as a resource what the
// caller's policies keep out of a tool's result. The gateway's notes
// come first, as text contents of the URI read. The server's _meta is
// dropped, as a tool result's is.
//
// An app's content (c.pinned) is served as approved or not at all:
// inspection refuses it on any finding (inspectionOf), and an answer
// the other stages would change (a part removed, a note added, the
// guardrail's replacement) is withheld too.
func (f *featureScope) screenRead(ctx context.Context, c *callScope, raw json.RawMessage, uri string) (sdk.Result, error) {
	in := &sdk.ReadResourceResult{}
	if err := json.Unmarshal(raw, in); err != nil {
		c.rec.Outcome, c.rec.ErrorKind = audit.OutcomeFailed, string(mcp.KindInvalidResponse)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's answer is not a resource"}
	}
	t := &typedResult{}
	for _, rc := range in.Contents {
		if rc != nil {
			rc.Meta = nil
			t.content = append(t.content, &sdk.EmbeddedResource{Resource: rc})
		}
	}
	sent := slices.Clone(t.content)
	res, err := f.readable(ctx, c, t)
	if err != nil {
		return nil, err
	}
	if c.pinned && !slices.Equal(res.Content, sent) {
		c.rec.InspectionAction = string(inspect.Refuse)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "The gateway withheld this app: its content is served as approved or not at all, and the access policy or the guardrail would have changed it."}
	}
	out := &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{}}
	for _, b := range res.Content {
		switch x := b.(type) {
		case *sdk.EmbeddedResource:
			out.Contents = append(out.Contents, x.Resource)
		case *sdk.TextContent:
			// The gateway's note, or the guardrail's replacement.
			out.Contents = append(out.Contents, &sdk.ResourceContents{URI: uri, MIMEType: "text/plain", Text: x.Text})
		}
	}
	return out, nil
}

// readable is t screened as a tool's result that is more than text is
// (readableTyped: result inspection, the content-type rule, the guardrail
// webhook, and the caller's read mark raised before the agent reads it);
// a withheld answer is an error carrying the gateway's text.
func (f *featureScope) readable(ctx context.Context, c *callScope, t *typedResult) (*sdk.CallToolResult, error) {
	res := f.g.readableTyped(ctx, f.id, c, t, false)
	if res.IsError {
		why := "The gateway withheld this answer."
		if len(res.Content) == 1 {
			if t, ok := res.Content[0].(*sdk.TextContent); ok {
				why = t.Text
			}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: why}
	}
	return res, nil
}

// send audits before, makes the upstream request with the server's
// credential for the caller, screens the answer (screen), and audits the
// outcome with what screening found. A record that cannot be written
// refuses the request.
//
// screen gives the agent's answer, as a tool's result is given: screened
// (result inspection, the guardrail, the content-type rule), and what the
// agent is about to read raises the caller's read mark first (the
// write-down rule, ADR 057); a mark that cannot be written withholds the
// answer. pinned says the content is approved by its hash.
func (f *featureScope) send(ctx context.Context, rec *audit.Record, srv *mcpv1alpha1.McpServer, pinned bool,
	do func(mcp.Endpoint) (json.RawMessage, error), screen func(*callScope, json.RawMessage) (sdk.Result, error)) (sdk.Result, error) {
	g := f.g
	rec.Decision, rec.Phase, rec.Time = "Allowed", audit.PhaseBefore, g.now()
	if err := g.Audit.Write(ctx, *rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record could not be written; refusing", "object", rec.Tool)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "refused because its audit record could not be written"}
	}
	start := time.Now()
	ep, err := f.endpoint(ctx, srv)
	var raw json.RawMessage
	if err == nil {
		raw, err = do(ep)
	}
	rec.Phase, rec.Time, rec.LatencyMillis = audit.PhaseAfter, g.now(), time.Since(start).Milliseconds()
	var (
		answer  error
		res     sdk.Result
		me      *mcp.Error
		consent *consentNeeded
		refused *upstreamRefused
	)
	switch {
	case errors.As(err, &consent):
		rec.Outcome, rec.Reason, rec.Detail = audit.OutcomeDenied, audit.DenyUpstreamAuthorization, consent.need.Reason
		answer = f.askConsent(consent)
	case errors.As(err, &refused):
		rec.Outcome, rec.Reason, rec.Detail = audit.OutcomeDenied, audit.DenyUpstreamAuthorization, refused.detail
		answer = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: refused.msg}
	case err == nil:
		rec.Outcome = audit.OutcomeSucceeded
		c := &callScope{key: types.NamespacedName{Namespace: f.id.Namespace, Name: rec.Tool}, policies: f.policies,
			class: mcpv1alpha1.DataClass(rec.DataClass), rec: *rec, pinned: pinned}
		res, answer = screen(c, raw)
		*rec = c.rec
	case errors.Is(err, errContentChanged):
		rec.Outcome, rec.Reason = audit.OutcomeDenied, DenyContentChanged
		answer = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the app's content changed since it was approved; it is not served until approved again"}
	case errors.As(err, &me) && me.Kind == mcp.KindOversized:
		rec.Outcome, rec.Reason, rec.ErrorKind = audit.OutcomeDenied, DenyResultTooLarge, string(me.Kind)
		answer = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the resource is larger than this gateway passes for it (%d bytes, spec.maxReadBytes)", me.Limit)}
	default:
		rec.Outcome = audit.OutcomeFailed
		if errors.As(err, &me) {
			rec.ErrorKind = string(me.Kind)
		}
		answer = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server could not answer: " + rec.ErrorKind}
	}
	if werr := g.Audit.Write(ctx, *rec); werr != nil {
		logging.FromContext(ctx, logging.Gateway).Error(werr, "the audit record of the outcome could not be written", "object", rec.Tool)
	}
	if answer != nil {
		return nil, answer
	}
	return res, nil
}

// featureDenial audits a refusal of a prompts/get or a resources/read.
func (g *Gateway) featureDenial(ctx context.Context, rec audit.Record, reason, detail string) {
	rec.Phase, rec.Decision, rec.Reason, rec.Detail, rec.Time = audit.PhaseDenied, "Denied", reason, detail, g.now()
	g.writeDenial(ctx, rec)
}

// featureRefusal tells a caller RBAC allows why the object is not served.
func featureRefusal(kind string, v featureVerdict) string {
	if v.reason == audit.DenyAboveCeiling {
		return "the " + kind + "'s data class is above the caller's ceiling (McpAccessPolicy)"
	}
	msg := "the " + kind + " is not servable now"
	switch v.detail {
	case mcpv1alpha1.ReasonDisabled:
		msg += ": it is disabled"
	case mcpv1alpha1.ReasonDefinitionChanged:
		msg += ": its definition changed since it was approved"
	case mcpv1alpha1.ReasonDefinitionNotApproved:
		msg += ": no definition of it is approved"
	case mcpv1alpha1.ReasonRemovedFromServer:
		msg += ": its server no longer offers it"
	case mcpv1alpha1.ReasonServerNotFound:
		msg += ": its McpServer does not exist"
	case mcpv1alpha1.ReasonReviewedTextInvalid:
		msg += ": its reviewed text describes an argument it does not have"
	}
	return msg
}

// promptArgumentsHash is "sha256:<hex>" of a prompt's arguments, encoded with sorted
// keys: the record names them without holding them.
func promptArgumentsHash(args map[string]string) string {
	b, _ := json.Marshal(args)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// templateMatches reports whether uri is an expansion of an RFC 6570 URI
// template: a simple expression ({x}) stands for one or more characters
// other than / ? # and &, a reserved or fragment one ({+x}, {#x}) for any,
// the others ({/x} {.x} {;x} {?x} {&x}) for their prefixed forms, and
// everything outside expressions for itself.
func templateMatches(template, uri string) bool {
	re, err := templateRegexp(template)
	return err == nil && re.MatchString(uri)
}

func templateRegexp(template string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for len(template) > 0 {
		open := strings.IndexByte(template, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(template))
			break
		}
		end := strings.IndexByte(template[open:], '}')
		if end < 0 {
			return nil, errors.New("unclosed expression")
		}
		b.WriteString(regexp.QuoteMeta(template[:open]))
		expr := template[open+1 : open+end]
		op := byte(0)
		if expr != "" {
			op = expr[0]
		}
		switch op {
		case '+', '#':
			b.WriteString(`.*`)
		case '/':
			b.WriteString(`(/[^/?#]*)*`)
		case '.':
			b.WriteString(`(\.[^/?#.]*)*`)
		case ';':
			b.WriteString(`(;[^/?#;]*)*`)
		case '?', '&':
			b.WriteString(`([?&][^#]*)?`)
		default:
			b.WriteString(`[^/?#&]+`)
		}
		template = template[open+end+1:]
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
