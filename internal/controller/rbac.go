// Package controller holds the reconcilers of the mcp.catalog.dev kinds. Each
// Reconcile is thin: it loads the object, runs ordered sub-reconcilers and
// patches status once.
package controller

// The permissions every controller of this package shares. Secrets and
// ConfigMaps are readable with get only: credentials and CA bundles are read
// at the start of each operation and never listed or cached cluster-wide.
//
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpservers;mcptools;mcpdelegationprofiles;mcpaccesspolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=mcp.catalog.dev,resources=mcpservers/status;mcptools/status;mcpdelegationprofiles/status;mcpaccesspolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=get
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch
