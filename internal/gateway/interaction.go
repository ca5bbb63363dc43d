package gateway

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// A server's requests for input during a call (elicitation, sampling),
// relayed to the agent that made the call under the tool's policy
// (spec.interaction), each audited without its content
// (docs/adr/064-interaction-relayed-under-policy.md). The MCP client
// hands the send stage each request it reads on the call's own response
// stream (mcp.WithInteraction); the stage checks it against the tool's
// policy, asks the calling agent through the channel its call came on,
// and answers the server with what the agent said, or with a refusal.
// Only a session kept in this process is such a channel: without one
// (the chart's initialize era, 2026-07-28), every request is refused.

// agentAsker asks the agent that made a call what its server asks,
// bound to that call: it is the call's own session, set on the call's
// context, never looked up.
type agentAsker interface {
	ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

type askerKey struct{}

func askerOf(ctx context.Context) agentAsker {
	a, _ := ctx.Value(askerKey{}).(agentAsker)
	return a
}

// sessionAsker asks through the agent's session kept in this process:
// the go-sdk sends the request on the call's stream and waits for the
// agent's answer in that session.
type sessionAsker struct{ ss *sdk.ServerSession }

func (s sessionAsker) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case mcp.MethodElicit:
		var p sdk.ElicitParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		res, err := s.ss.Elicit(ctx, &p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	default:
		var p sdk.CreateMessageParams //nolint:staticcheck // deprecated in 2026-07-28, still what clients and servers of the initialize era send
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		res, err := s.ss.CreateMessage(ctx, &p) //nolint:staticcheck // deprecated in 2026-07-28; relayed for servers of the initialize era
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}
}

// callInteraction answers one call's server requests (mcp.Interaction).
type callInteraction struct {
	g     *Gateway
	c     *callScope
	asker agentAsker
}

// interactionFor is what the send stage hands the client for the call's
// server requests.
func (g *Gateway) interactionFor(ctx context.Context, c *callScope) *callInteraction {
	return &callInteraction{g: g, c: c, asker: askerOf(ctx)}
}

// Request relays the server's request to the calling agent when the
// tool's policy allows it and the agent can be asked, and answers it with
// a refusal otherwise. Either way one audit record says what was asked and
// what came of it; without that record nothing is relayed.
func (ci *callInteraction) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.RPCError) {
	var policy *mcpv1alpha1.ToolInteraction
	if ci.c.tool != nil {
		policy = ci.c.tool.Spec.Interaction
	}
	kind, mode, refused := checkInteraction(policy, method, params)
	if refused == "" && ci.asker == nil {
		refused = audit.RefusedNoChannel
	}
	rec := ci.c.rec
	rec.Phase, rec.Time, rec.Interaction, rec.InteractionMode = audit.PhaseInteraction, ci.g.now(), kind, mode
	rec.Outcome, rec.ErrorKind, rec.LatencyMillis = "", "", 0
	if refused != "" {
		rec.Decision, rec.Reason = audit.DecisionRefused, refused
		ci.write(ctx, rec)
		return refuseRequest(method)
	}
	rec.Decision = audit.DecisionRelayed
	// Recorded before the agent is asked: no record, no relay.
	if !ci.write(ctx, rec) {
		return refuseRequest(method)
	}
	res, err := ci.asker.ask(ctx, method, params)
	rec.Time = ci.g.now()
	if err != nil {
		rec.InteractionResult = "error"
		ci.write(ctx, rec)
		return refuseRequest(method)
	}
	rec.InteractionResult = interactionResult(method, res)
	ci.write(ctx, rec)
	return res, nil
}

func (ci *callInteraction) write(ctx context.Context, rec audit.Record) bool {
	if err := ci.g.Audit.Write(ctx, rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of a server's request could not be written; refusing it", "tool", ci.c.key.String())
		return false
	}
	return true
}

// refuseRequest is the answer to a request the agent is not asked: an
// elicitation declined, a sampling request refused as a person would.
func refuseRequest(method string) (json.RawMessage, *mcp.RPCError) {
	if method == mcp.MethodElicit {
		return json.RawMessage(`{"action":"decline"}`), nil
	}
	return nil, &mcp.RPCError{Code: -1, Message: "the request was not relayed to the user"}
}

// interactionResult names what the agent answered, never its content:
// an elicitation's action, or that a sampling request was answered.
func interactionResult(method string, res json.RawMessage) string {
	if method != mcp.MethodElicit {
		return "answered"
	}
	var r struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(res, &r)
	switch r.Action {
	case "accept", "decline", "cancel":
		return r.Action
	}
	return "error"
}

// checkInteraction decides a server's request against the tool's policy
// (nil: form elicitation only): its kind and mode, and why it is refused
// ("" when it may be relayed).
func checkInteraction(p *mcpv1alpha1.ToolInteraction, method string, params json.RawMessage) (kind, mode, refused string) {
	if method != mcp.MethodElicit {
		if p == nil || !p.Sampling {
			return audit.InteractionSampling, "", audit.RefusedSamplingNotAllowed
		}
		return audit.InteractionSampling, "", ""
	}
	var e struct {
		Mode            string `json:"mode"`
		URL             string `json:"url"`
		RequestedSchema *struct {
			Properties map[string]struct {
				Format string `json:"format"`
			} `json:"properties"`
		} `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &e) != nil {
		return audit.InteractionElicitation, "", audit.RefusedMalformedRequest
	}
	switch {
	case e.Mode == "url" || (e.Mode == "" && e.URL != ""):
		if e.RequestedSchema != nil || !urlHostAllowed(p, e.URL) {
			return audit.InteractionElicitation, "url", audit.RefusedURLHostNotAllowed
		}
		return audit.InteractionElicitation, "url", ""
	case e.Mode == "form" || e.Mode == "":
		if p != nil && p.FormElicitation == mcpv1alpha1.FormElicitationRefused {
			return audit.InteractionElicitation, "form", audit.RefusedFormNotAllowed
		}
		if e.URL != "" || e.RequestedSchema == nil {
			return audit.InteractionElicitation, "form", audit.RefusedMalformedRequest
		}
		for name, f := range e.RequestedSchema.Properties {
			if strings.EqualFold(f.Format, "password") || (p != nil && slices.Contains(p.SensitiveFields, name)) {
				return audit.InteractionElicitation, "form", audit.RefusedSensitiveField
			}
		}
		return audit.InteractionElicitation, "form", ""
	default:
		return audit.InteractionElicitation, "", audit.RefusedMalformedRequest
	}
}

// urlHostAllowed reports whether raw is an https URL, without userinfo,
// to a host the policy names: exactly, or below a "*." domain.
func urlHostAllowed(p *mcpv1alpha1.ToolInteraction, raw string) bool {
	if p == nil || len(p.URLElicitationHosts) == 0 {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range p.URLElicitationHosts {
		if domain, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+domain) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}
