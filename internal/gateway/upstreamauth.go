package gateway

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway/audit"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
)

// authorizationInput is the id of the consent link in a multi-round-trip
// call.
const authorizationInput = "authorization"

// personUpstreams is what Upstreams also does for a per-person server:
// the endpoint presenting the person's token (upstream.Endpoints).
type personUpstreams interface {
	CallAs(ctx context.Context, srv *mcpv1alpha1.McpServer, cred *mcp.Credential) (mcp.Endpoint, error)
}

// authorizeUpstream is the upstream authorization stage of a call of a
// per-person server (ADR 056): the calling person's own token at the
// server, or, when they have none that works (never authorized, consent
// refused, refresh token revoked), the consent link, handed to the agent
// as a URL elicitation where its client takes one and in words
// otherwise. Other servers pass through. The token is kept in the scope
// for send; it is never the discovery credential nor anyone else's.
func (g *Gateway) authorizeUpstream(ctx context.Context, req *sdk.CallToolRequest, id *authn.Identity, c *callScope) (*sdk.CallToolResult, error) {
	c.callerToken = callerToken(req, id)
	srv := c.decidedServer
	if srv == nil {
		srv = &mcpv1alpha1.McpServer{}
		if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: c.tool.Namespace, Name: c.tool.Spec.ServerRef.Name}, srv, readOnly); err != nil {
			return g.deny(ctx, c.rec, c.tool, audit.DenyNotServable, mcpv1alpha1.ReasonServerNotFound, "the tool's server no longer exists"), nil
		}
	}
	if srv.Spec.Auth == nil || srv.Spec.Auth.PerPerson == nil {
		return nil, nil
	}
	if g.PersonAuth == nil {
		return g.deny(ctx, c.rec, c.tool, audit.DenyUpstreamAuthorization, "NotConfigured",
			"this tool's server is called with each person's own authorization, and this gateway has no callback URL configured to obtain one; the call was not made"), nil
	}
	if resp, ok := req.Params.InputResponses[authorizationInput]; ok {
		if r, ok := resp.(*sdk.ElicitResult); !ok || r.Action != "accept" {
			return g.deny(ctx, c.rec, c.tool, audit.DenyUpstreamAuthorization, "ConsentDeclined",
				"the client declined to open the authorization link; the call was not made"), nil
		}
	}
	p := personauth.Person{User: id.Username}
	cred, err := g.PersonAuth.Token(ctx, srv, p)
	var need *personauth.ConsentError
	switch {
	case err == nil:
		c.personCred = cred
		return nil, nil
	case !errors.As(err, &need):
		logging.FromContext(ctx, logging.Gateway).Info("the person's upstream token could not be had", "server", srv.Namespace+"/"+srv.Name, "reason", err.Error())
		return g.deny(ctx, c.rec, c.tool, audit.DenyUpstreamAuthorization, "Unavailable",
			"the gateway could not obtain your token for this tool's server now ("+err.Error()+"); try again"), nil
	}
	link, err := g.PersonAuth.ConsentURL(ctx, srv, p)
	var setup *personauth.SetupError
	if errors.As(err, &setup) {
		return g.deny(ctx, c.rec, c.tool, audit.DenyUpstreamAuthorization, "NotConfigured", need.Error()+", and "+setup.Error()+"; the call was not made"), nil
	}
	if err != nil {
		logging.FromContext(ctx, logging.Gateway).Info("no consent link could be made", "server", srv.Namespace+"/"+srv.Name, "reason", err.Error())
		return g.deny(ctx, c.rec, c.tool, audit.DenyUpstreamAuthorization, need.Reason,
			need.Error()+", and the gateway could not reach its authorization server to make a link ("+err.Error()+"); try again"), nil
	}
	return g.askConsent(ctx, req, c, srv, need, link)
}

// askConsent tells the agent that its person must authorize srv at link,
// the way its protocol revision and capabilities allow (as waitFor does
// for approvals), and records that the call was not made.
func (g *Gateway) askConsent(ctx context.Context, req *sdk.CallToolRequest, c *callScope, srv *mcpv1alpha1.McpServer, need *personauth.ConsentError, link string) (*sdk.CallToolResult, error) {
	msg := fmt.Sprintf("The MCP server %s is called with your own authorization: %s. Open the link to authorize it, then call the tool again.", srv.Name, need.Error())
	rec := c.rec
	rec.Phase, rec.Decision, rec.Reason, rec.Detail, rec.Time = audit.PhaseDenied, "Denied", audit.DenyUpstreamAuthorization, need.Reason, g.now()
	if err := g.Audit.Write(ctx, rec); err != nil {
		logging.FromContext(ctx, logging.Gateway).Error(err, "the audit record of a call waiting for a person's authorization could not be written")
	}
	obsOf(ctx).end(audit.OutcomeDenied, audit.DenyUpstreamAuthorization)
	elicit := &sdk.ElicitParams{Mode: "url", Message: msg, URL: link, ElicitationID: "authorize/" + srv.Namespace + "/" + srv.Name}
	caps := req.ClientCapabilities()
	if caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil {
		if req.Session != nil && req.Session.InitializeParams() != nil && req.Session.InitializeParams().ProtocolVersion < modernProtocol {
			return nil, sdk.URLElicitationRequiredError([]*sdk.ElicitParams{elicit})
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{authorizationInput: elicit}}, nil
	}
	return refusal("the call was not made. " + msg + " Link: " + link), nil
}

// callerToken is the OAuth access token a person presented for this
// request, which a delegation profile's actor entry may take as its
// subject token (subjectTokenFrom: Caller); empty for a ServiceAccount,
// whose token never leaves the gateway.
func callerToken(req *sdk.CallToolRequest, id *authn.Identity) secret.Secret {
	if req.Extra == nil {
		return secret.Secret{}
	}
	return bearerOf(req.Extra.Header, id)
}

// upstreamFor is the endpoint send calls: the person's token for a
// per-person server, the server's own (or exchanged) credential otherwise.
func (g *Gateway) upstreamFor(ctx context.Context, id *authn.Identity, c *callScope) (mcp.Endpoint, error) {
	if c.personCred == nil {
		return g.Upstreams.Call(ctx, c.srv, credentials.Actor{Username: id.Username, Groups: id.Groups, SubjectToken: c.callerToken, Issuer: id.Issuer})
	}
	as, ok := g.Upstreams.(personUpstreams)
	if !ok {
		return mcp.Endpoint{}, credentials.ErrPerPersonCall
	}
	return as.CallAs(ctx, c.srv, c.personCred)
}
