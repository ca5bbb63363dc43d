package gateway

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// A shared catalog (docs/adr/032-shared-catalog.md): the tools of an
// McpServer another namespace owns and shares are offered to a consuming
// namespace that accepted them with an McpSharedServer, under the name
// mcps_<McpSharedServer>_<remote name>. Both consents, and the consumer's
// narrowing, are read from the cache on every list and call, like
// everything else the decision reads; nothing about a grant is kept
// between requests.

// toolOffer is a tool as the caller's namespace sees it: one of its own, or
// one of another namespace shared with it through an McpSharedServer.
type toolOffer struct {
	tool *mcpv1alpha1.McpTool
	// shared is the caller's namespace's McpSharedServer the tool is
	// offered through; nil for a tool of the caller's own namespace.
	shared *mcpv1alpha1.McpSharedServer
	// waitsAsTask is set, by a list's decision, for a tool whose calls by
	// the caller wait for a person's approval, which a call asking for a
	// task waits for as one (approvaltask.go).
	waitsAsTask bool
}

// localName is the name agents see.
func (o toolOffer) localName() string {
	if o.shared == nil {
		return o.tool.Status.LocalName
	}
	return toolname.SharedLocalName(o.shared.Name, o.tool.Spec.RemoteName)
}

// authzName is the name the caller's namespace's RBAC grants (verb call on
// mcptools): the McpTool's own name, or for a shared tool its local name,
// which no McpTool has ("_" is not allowed in object names).
func (o toolOffer) authzName() string {
	if o.shared == nil {
		return o.tool.Name
	}
	return o.localName()
}

// serverName is the server as the caller's namespace names it: its own
// McpServer, or the McpSharedServer.
func (o toolOffer) serverName() string {
	if o.shared == nil {
		return o.tool.Spec.ServerRef.Name
	}
	return o.shared.Name
}

// ref is what the call handler of the offer is bound to.
func (o toolOffer) ref() toolRef {
	r := toolRef{key: types.NamespacedName{Namespace: o.tool.Namespace, Name: o.tool.Name}}
	if o.shared != nil {
		r.via = o.shared.Name
	}
	return r
}

// version changes whenever what the offer looks like may change.
func (o toolOffer) version() string {
	if o.shared == nil {
		return o.tool.ResourceVersion
	}
	return o.tool.ResourceVersion + "/" + o.shared.ResourceVersion
}

// toolRef names the tool a call handler is for: the McpTool, and the
// caller's namespace's McpSharedServer it was offered through ("" for a
// tool of that namespace).
type toolRef struct {
	key types.NamespacedName
	via string
}

func (r toolRef) String() string {
	if r.via == "" {
		return r.key.String()
	}
	return r.key.String() + " (shared as " + r.via + ")"
}

// sharedGrant is whether the owner of the server behind ss shares it with
// the caller's namespace now, the owner's McpServer when it does, and the
// sharing decision's inputs otherwise nil. A server that does not exist
// and one not granted are the same answer.
func (g *Gateway) sharedGrant(ctx context.Context, ss *mcpv1alpha1.McpSharedServer, servers map[types.NamespacedName]*mcpv1alpha1.McpServer) (*mcpv1alpha1.McpServer, error) {
	if governance.InvalidSharedServer(ss) != "" {
		return nil, nil
	}
	if err := g.ownerServed(ctx, ss); err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: ss.Spec.Server.Namespace, Name: ss.Spec.Server.Name}
	srv, err := g.readServer(ctx, key, servers)
	if err != nil || srv == nil {
		return nil, err
	}
	ns := &corev1.Namespace{}
	if err := g.Reader.Get(ctx, types.NamespacedName{Name: ss.Namespace}, ns); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the caller's namespace: %w", err)
		}
	}
	if !g.SharingTrust.SharedWith(srv, ss.Namespace, ns.Labels) {
		return nil, nil
	}
	return srv, nil
}

// sharedServer reads the caller's namespace's McpSharedServer named name:
// nil when there is none.
func (g *Gateway) sharedServer(ctx context.Context, namespace, name string) (*mcpv1alpha1.McpSharedServer, error) {
	ss := &mcpv1alpha1.McpSharedServer{}
	if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, ss); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading a shared server: %w", err)
	}
	return ss, nil
}

// offerNamed is the offer the caller's namespace would have under the
// local name name, whatever the decision says of it, or nil when no tool
// has that name there.
func (g *Gateway) offerNamed(ctx context.Context, namespace, name string) (*toolOffer, error) {
	if !toolname.IsSharedLocalName(name) {
		object, err := toolname.ObjectNameOfLocal(name)
		if err != nil {
			return nil, nil
		}
		t := &mcpv1alpha1.McpTool{}
		if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: object}, t, readOnly); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		if t.Status.LocalName != name {
			return nil, nil
		}
		return &toolOffer{tool: t}, nil
	}
	shared, remote, err := toolname.ParseSharedLocalName(name)
	if err != nil {
		return nil, nil
	}
	ss, err := g.sharedServer(ctx, namespace, shared)
	if err != nil || ss == nil {
		return nil, err
	}
	if err := g.ownerServed(ctx, ss); err != nil {
		return nil, err
	}
	object, err := toolname.ObjectName(ss.Spec.Server.Name, remote)
	if err != nil {
		return nil, nil
	}
	t := &mcpv1alpha1.McpTool{}
	if err := g.Reader.Get(ctx, types.NamespacedName{Namespace: ss.Spec.Server.Namespace, Name: object}, t, readOnly); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if t.Spec.RemoteName != remote || t.Spec.ServerRef.Name != ss.Spec.Server.Name {
		return nil, nil
	}
	return &toolOffer{tool: t, shared: ss}, nil
}

// readOffer reads again the offer a call handler was bound to: nil when
// the tool or the McpSharedServer is gone, or no longer the one named.
func (g *Gateway) readOffer(ctx context.Context, namespace string, r toolRef) (*toolOffer, error) {
	t := &mcpv1alpha1.McpTool{}
	if err := g.Reader.Get(ctx, r.key, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if r.via == "" {
		return &toolOffer{tool: t}, nil
	}
	ss, err := g.sharedServer(ctx, namespace, r.via)
	if err != nil || ss == nil {
		return nil, err
	}
	return &toolOffer{tool: t, shared: ss}, nil
}

// sharedOffers are the tools of every McpSharedServer of the caller's
// namespace whose server is shared with it now; the decision decides on
// each again (and reads the grant again, from servers).
func (g *Gateway) sharedOffers(ctx context.Context, namespace string, servers map[types.NamespacedName]*mcpv1alpha1.McpServer) ([]toolOffer, error) {
	var list mcpv1alpha1.McpSharedServerList
	if err := g.Reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing shared servers: %w", err)
	}
	var out []toolOffer
	byNamespace := map[string]*mcpv1alpha1.McpToolList{}
	for i := range list.Items {
		ss := &list.Items[i]
		if g.ownerServed(ctx, ss) != nil {
			// Logged; one misconfigured McpSharedServer does not take
			// the namespace's other tools from the list.
			continue
		}
		if srv, err := g.sharedGrant(ctx, ss, servers); err != nil {
			return nil, err
		} else if srv == nil {
			continue
		}
		owner := ss.Spec.Server.Namespace
		tools, ok := byNamespace[owner]
		if !ok {
			tools = &mcpv1alpha1.McpToolList{}
			opts := []client.ListOption{client.InNamespace(owner)}
			if g.ServableIndex {
				// As for the caller's own tools (visibleTools): only the
				// listable ones, shared, never changed.
				opts = append(opts, client.MatchingFields{IndexListable: "true"}, client.UnsafeDisableDeepCopy)
			}
			if err := g.Reader.List(ctx, tools, opts...); err != nil {
				return nil, fmt.Errorf("listing shared tools: %w", err)
			}
			byNamespace[owner] = tools
		}
		for j := range tools.Items {
			if t := &tools.Items[j]; t.Spec.ServerRef.Name == ss.Spec.Server.Name {
				out = append(out, toolOffer{tool: t, shared: ss})
			}
		}
	}
	return out, nil
}
