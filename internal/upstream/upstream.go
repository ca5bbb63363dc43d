// Package upstream is the one way from an McpServer to the wire: it turns an
// McpServer, and for a tool call the actor the call is made for, into the
// mcp.Endpoint that reaches it, with its credential resolved. Imports,
// probes and tool calls all go through it, so what a spec field means on the
// wire is decided in one place.
package upstream

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// Endpoints builds ready endpoints. Its errors are those of
// credentials.Resolver: *credentials.MissingError when a referenced object
// is not there yet, *credentials.UnusableCABundleError when the CA bundle
// spec.tls.caBundleRef names cannot be used,
// *credentials.DelegationError when no token can be had for the actor,
// credentials.ErrDelegationUnavailable, and otherwise a failure to read from
// the API server.
type Endpoints struct {
	Credentials *credentials.Resolver
}

// Discovery returns the endpoint imports and probes use, presenting the
// server's own (or discovery) credential.
func (e *Endpoints) Discovery(ctx context.Context, srv *mcpv1alpha1.McpServer) (mcp.Endpoint, error) {
	if a := srv.Spec.Auth; a != nil && a.Delegated != nil {
		// Imports of a delegated server are only worth making once its tool
		// calls can be served: its profile must exist and be Ready.
		p, err := e.Credentials.Profile(ctx, srv)
		if err != nil {
			return mcp.Endpoint{}, err
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, mcpv1alpha1.ConditionReady) {
			return mcp.Endpoint{}, &credentials.MissingError{Reason: mcpv1alpha1.ReasonProfileNotReady,
				Err: fmt.Errorf("McpDelegationProfile %q is not Ready", p.Name)}
		}
	}
	u, err := e.Credentials.URL(ctx, srv)
	if err != nil {
		return mcp.Endpoint{}, err
	}
	cred, err := e.Credentials.Discovery(ctx, srv)
	if err != nil {
		return mcp.Endpoint{}, err
	}
	ep := Endpoint(srv, cred)
	ep.URL = u
	return e.withTrust(ctx, srv, ep)
}

// Call returns the endpoint a tool call made for actor uses; for a
// delegated server it presents a token exchanged for that actor.
func (e *Endpoints) Call(ctx context.Context, srv *mcpv1alpha1.McpServer, actor credentials.Actor) (mcp.Endpoint, error) {
	u, err := e.Credentials.URL(ctx, srv)
	if err != nil {
		return mcp.Endpoint{}, err
	}
	cred, err := e.Credentials.ForCall(ctx, srv, actor)
	if err != nil {
		return mcp.Endpoint{}, err
	}
	ep := Endpoint(srv, cred)
	ep.URL = u
	return e.withTrust(ctx, srv, ep)
}

// CallAs returns the endpoint a tool call presenting cred uses: a
// per-person server's call, with the token the gateway holds for the
// calling person.
func (e *Endpoints) CallAs(ctx context.Context, srv *mcpv1alpha1.McpServer, cred *mcp.Credential) (mcp.Endpoint, error) {
	u, err := e.Credentials.URL(ctx, srv)
	if err != nil {
		return mcp.Endpoint{}, err
	}
	ep := Endpoint(srv, cred)
	ep.URL = u
	return e.withTrust(ctx, srv, ep)
}

// withTrust adds the CA bundle spec.tls.caBundleRef names, read at every
// operation like a credential, so a rotated bundle is used at once.
func (e *Endpoints) withTrust(ctx context.Context, srv *mcpv1alpha1.McpServer, ep mcp.Endpoint) (mcp.Endpoint, error) {
	b, err := credentials.CABundle(ctx, e.Credentials.Secrets, srv.Namespace, srv.Spec.TLS)
	if err != nil {
		return mcp.Endpoint{}, err
	}
	ep.CABundle = b
	return ep, nil
}

// Endpoint is what srv's spec means to the MCP client, presenting cred, at
// spec.url. A server whose URL is in a Secret (spec.urlFrom) is reached
// only through Discovery and Call, which read it.
func Endpoint(srv *mcpv1alpha1.McpServer, cred *mcp.Credential) mcp.Endpoint {
	ep := mcp.Endpoint{
		Name:                    srv.Namespace + "/" + srv.Name,
		URL:                     srv.Spec.URL,
		Credential:              cred,
		AllowInsecureCredential: srv.Spec.AllowCredentialOverHTTP,
		AllowPrivateNetwork:     srv.Spec.AllowPrivateNetwork,
		Namespace:               srv.Namespace,
		MaxPages:                int(srv.Spec.Import.MaxPages),
		MaxTools:                int(srv.Spec.Import.MaxTools),
		MaxCatalogBytes:         srv.Spec.Import.MaxCatalogBytes,
	}
	if srv.Spec.OperationTimeout != nil {
		ep.Timeout = srv.Spec.OperationTimeout.Duration
	}
	return ep
}
