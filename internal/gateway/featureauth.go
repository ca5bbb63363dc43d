package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/gateway/authn"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/logging"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
)

// A prompts/get or resources/read is sent upstream as a call of the same
// server would be (upstreamauth.go): with the person's own token at a
// per-person server (ADR 056), asking them for consent with the same link
// when they have none that works; with the token exchanged for the caller
// at a delegated server, the person's own access token as its subject
// token where the profile takes the caller's. Nothing of the discovery
// credential, and nothing of anyone else's, is used for a person.

// endpoint is where a get or read of srv is sent, with whose credential.
func (f *featureScope) endpoint(ctx context.Context, srv *mcpv1alpha1.McpServer) (mcp.Endpoint, error) {
	g := f.g
	if srv.Spec.Auth == nil || srv.Spec.Auth.PerPerson == nil {
		return g.Upstreams.Call(ctx, srv, credentials.Actor{Username: f.id.Username, Groups: f.id.Groups, SubjectToken: bearerOf(f.header, f.id), Issuer: f.id.Issuer})
	}
	if g.PersonAuth == nil {
		return mcp.Endpoint{}, &upstreamRefused{detail: "NotConfigured",
			msg: "this server is read with each person's own authorization, and this gateway has no callback URL configured to obtain one; nothing was read"}
	}
	as, ok := g.Upstreams.(personUpstreams)
	if !ok {
		return mcp.Endpoint{}, credentials.ErrPerPersonCall
	}
	p := personauth.Person{User: f.id.Username}
	cred, err := g.PersonAuth.Token(ctx, srv, p)
	var need *personauth.ConsentError
	switch {
	case err == nil:
		return as.CallAs(ctx, srv, cred)
	case !errors.As(err, &need):
		logging.FromContext(ctx, logging.Gateway).Info("the person's upstream token could not be had", "server", srv.Namespace+"/"+srv.Name, "reason", err.Error())
		return mcp.Endpoint{}, &upstreamRefused{detail: "Unavailable",
			msg: "the gateway could not obtain your token for this server now (" + err.Error() + "); try again"}
	}
	link, err := g.PersonAuth.ConsentURL(ctx, srv, p)
	var setup *personauth.SetupError
	if errors.As(err, &setup) {
		return mcp.Endpoint{}, &upstreamRefused{detail: "NotConfigured", msg: need.Error() + ", and " + setup.Error() + "; nothing was read"}
	}
	if err != nil {
		logging.FromContext(ctx, logging.Gateway).Info("no consent link could be made", "server", srv.Namespace+"/"+srv.Name, "reason", err.Error())
		return mcp.Endpoint{}, &upstreamRefused{detail: need.Reason,
			msg: need.Error() + ", and the gateway could not reach its authorization server to make a link (" + err.Error() + "); try again"}
	}
	return mcp.Endpoint{}, &consentNeeded{need: need, link: link, srv: srv}
}

// consentNeeded is a person's read of a per-person server they have no
// working token for: the link they authorize it at.
type consentNeeded struct {
	need *personauth.ConsentError
	link string
	srv  *mcpv1alpha1.McpServer
}

func (e *consentNeeded) Error() string { return e.need.Error() }

// upstreamRefused is a read the gateway does not send: the server cannot
// be called for this person now, for the reason detail says.
type upstreamRefused struct{ detail, msg string }

func (e *upstreamRefused) Error() string { return e.msg }

// askConsent is the answer to a read that needs the person's consent: a
// URL elicitation in the error the specification reserves for it, for a
// client that takes one, and the link in words otherwise.
func (f *featureScope) askConsent(c *consentNeeded) error {
	msg := fmt.Sprintf("The MCP server %s is read with your own authorization: %s. Open the link to authorize it, then ask again.", c.srv.Name, c.need.Error())
	if f.urlElicitation {
		return sdk.URLElicitationRequiredError([]*sdk.ElicitParams{{Mode: "url", Message: msg, URL: c.link, ElicitationID: "authorize/" + c.srv.Namespace + "/" + c.srv.Name}})
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "nothing was read. " + msg + " Link: " + c.link}
}

// bearerOf is the OAuth access token a person presented in header, which
// a delegation profile's actor entry may take as its subject token;
// empty for a ServiceAccount, whose token never leaves the gateway.
func bearerOf(header http.Header, id *authn.Identity) secret.Secret {
	if id.IsServiceAccount() || id.Issuer == "" || header == nil {
		return secret.Secret{}
	}
	scheme, token, ok := strings.Cut(header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return secret.Secret{}
	}
	return secret.New(strings.TrimSpace(token))
}
