package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/logging"
)

// The cache's field indexes. Every one is registered here, by RegisterIndexes,
// before any controller is set up, so no controller depends on another
// having registered what it lists by.
const (
	// indexToolServer is an McpTool's spec.serverRef.name.
	indexToolServer = "spec.serverRef.name"
	// indexServerProfile is a delegated McpServer's profile.
	indexServerProfile = "spec.auth.delegated.profileRef.name"
	// IndexSharedServerRef is an McpSharedServer's spec.server as
	// "<namespace>/<name>": the consumers of a shared server.
	IndexSharedServerRef = "spec.server"
)

// RegisterIndexes adds the field indexes the controllers list by to the
// manager's cache.
func RegisterIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &mcpv1alpha1.McpTool{}, indexToolServer,
		func(o client.Object) []string { return []string{o.(*mcpv1alpha1.McpTool).Spec.ServerRef.Name} }); err != nil {
		return fmt.Errorf("indexing McpTools by server: %w", err)
	}
	if err := idx.IndexField(ctx, &mcpv1alpha1.McpServer{}, indexServerProfile,
		func(o client.Object) []string {
			if a := o.(*mcpv1alpha1.McpServer).Spec.Auth; a != nil && a.Delegated != nil {
				return []string{a.Delegated.ProfileRef.Name}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("indexing McpServers by delegation profile: %w", err)
	}
	if err := idx.IndexField(ctx, &mcpv1alpha1.McpSharedServer{}, IndexSharedServerRef,
		func(o client.Object) []string {
			s := o.(*mcpv1alpha1.McpSharedServer).Spec.Server
			return []string{s.Namespace + "/" + s.Name}
		}); err != nil {
		return fmt.Errorf("indexing McpSharedServers by server: %w", err)
	}
	return nil
}

// byIndex maps an object to a request for each object of list type L in
// its namespace whose index field names it: the tools of a server, the
// servers of a delegation profile.
func byIndex[L any, PL interface {
	*L
	client.ObjectList
}](c client.Reader, field, what string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := PL(new(L))
		// Only names are read: no copy of every object is needed.
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			logging.FromContext(ctx, logging.Controllers).Error(err, "listing "+what)
			return nil
		}
		var reqs []reconcile.Request
		// Every item of a typed list is a client.Object.
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item.(client.Object))})
			return nil
		})
		return reqs
	}
}
