package registry

import (
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Callable is the CallableServer for McpServer srv as a caller reaches it
// in namespace under group (mcp_<server>, or mcps_<McpSharedServer> in a
// consuming namespace), with the tools that caller may call. The data class
// and approval are the server's spec; a caller that narrows them (a
// consumer's McpSharedServer) sets the narrowed ones on the result. The
// version follows VersionOf; the time is the last import, else the
// server's creation.
func Callable(srv *mcpv1alpha1.McpServer, namespace, group string, tools []string) CallableServer {
	c := CallableServer{
		Namespace:        namespace,
		Group:            group,
		Tools:            tools,
		DataClass:        string(srv.Spec.DataClass),
		ApprovalRequired: srv.Spec.ApprovalRequired == nil || *srv.Spec.ApprovalRequired,
		Version:          VersionOf(srv.Annotations[mcpv1alpha1.AnnotationRegistryVersion], srv.Generation),
		UpdatedAt:        srv.CreationTimestamp.Time,
		Origin:           OriginOf(srv.Annotations),
	}
	if t := srv.Status.LastImportTime; t != nil {
		c.UpdatedAt = t.Time
	}
	return c
}

// OriginOf reads the registry origin an import recorded in annotations;
// nil when there is none.
func OriginOf(annotations map[string]string) *Origin {
	name := annotations[mcpv1alpha1.AnnotationRegistryName]
	if name == "" {
		return nil
	}
	return &Origin{
		RegistryURL: annotations[mcpv1alpha1.AnnotationRegistryURL],
		Name:        name,
		Version:     annotations[mcpv1alpha1.AnnotationRegistryVersion],
	}
}
