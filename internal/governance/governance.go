// Package governance holds the platform's rules about McpTools, each once:
// whether a tool's current definition is the approved one, the effective
// data class and approval of a tool under its server's declaration,
// whether a tool is the operator's alone to delete, whether an
// McpAccessPolicy's spec is valid, and where a call approval stands
// (CallState). The controllers, the gateway, kubectl mcp and its console
// all call these functions; none of them restates a rule. Every function is
// pure: it reads the objects it is given and
// nothing else.
package governance

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// The operator's own field managers on McpTools. A spec field held by any
// other manager is a person's or Git's declaration.
const (
	// FieldManagerImporter owns what imports declare: an McpTool's
	// identity (spec.serverRef, spec.remoteName) and its labels.
	FieldManagerImporter = "mcp-catalog-importer"
	// FieldManagerToolStatus owns every field of an McpTool's status.
	FieldManagerToolStatus = "mcp-catalog-tool-status"
	// FieldManagerToolController names the McpTool controller's metadata
	// writes (removing an owner reference earlier versions set). Before
	// FieldManagerToolStatus existed it also wrote part of the status.
	FieldManagerToolController = "mcp-catalog-tool-controller"
)

// ownManagers are the managers whose spec fields declare nothing a person
// decided.
var ownManagers = map[string]bool{
	FieldManagerImporter:       true,
	FieldManagerToolStatus:     true,
	FieldManagerToolController: true,
}

// Unapproved says why a tool's current definition may not be served:
// ReasonDefinitionNotApproved when no definition is approved (enabling
// approves nothing, and a lost approval never counts as one),
// ReasonDefinitionChanged when another definition was approved, and ""
// when the current definition is the approved one. The approval is
// spec.approvedDefinitionHash alone; nothing in status approves.
func Unapproved(t *mcpv1alpha1.McpTool) string {
	switch approved := t.Spec.ApprovedDefinitionHash; {
	case approved == "":
		return mcpv1alpha1.ReasonDefinitionNotApproved
	case approved != t.Status.DefinitionHash:
		return mcpv1alpha1.ReasonDefinitionChanged
	}
	return ""
}

// Effective is a tool's data class and whether its calls need a person's
// approval: the server's declaration (keyed on the tool's reviewed
// effects where spec.approvalByEffect says so), tightened (never loosened)
// by the tool's spec. Without a server (nil) the strictest values apply:
// Restricted, approval required. A class the API server should have
// rejected ranks above every known one (DataClass.Rank), so it never
// loosens anything either.
func Effective(srv *mcpv1alpha1.McpServer, t *mcpv1alpha1.McpTool) (mcpv1alpha1.DataClass, bool) {
	if srv == nil {
		return mcpv1alpha1.DataClassRestricted, true
	}
	class := srv.Spec.DataClass
	if t.Spec.DataClass != "" {
		class = mcpv1alpha1.MaxDataClass(class, t.Spec.DataClass)
	}
	if !class.Valid() {
		class = mcpv1alpha1.DataClassRestricted
	}
	toolApproval := t.Spec.ApprovalRequired != nil && *t.Spec.ApprovalRequired
	return class, serverApproval(srv, EffectsOf(t)) || toolApproval
}

// ServerApprovalRequired is the server's declaration of approval: only an
// explicit false turns it off.
func ServerApprovalRequired(srv *mcpv1alpha1.McpServer) bool {
	return srv.Spec.ApprovalRequired == nil || *srv.Spec.ApprovalRequired
}

// Recorded is a tool's data class and whether its calls need a person's
// approval as the McpTool controller last recorded them in status, with
// the strictest values where it recorded none (or a class the API server
// should have rejected): Restricted, approval required. It is a report of
// what Effective computed when the tool was last reconciled, for display;
// no decision is made by it (status is writable by whoever holds
// mcptools/status, and a tool no controller reconciles keeps old values).
func Recorded(t *mcpv1alpha1.McpTool) (mcpv1alpha1.DataClass, bool) {
	class := t.Status.EffectiveDataClass
	if !class.Valid() {
		class = mcpv1alpha1.DataClassRestricted
	}
	approval := t.Status.EffectiveApprovalRequired == nil || *t.Status.EffectiveApprovalRequired
	return class, approval
}

// OutsideServerShard reports whether a tool's shard label
// (mcpv1alpha1.LabelShardKey) differs from its server's, present or absent
// alike: then the controller instance that reconciles the server does not
// reconcile the tool (docs/adr/019-sharding.md), and the tool must not be
// served until the server's next import labels it again.
func OutsideServerShard(srv *mcpv1alpha1.McpServer, t *mcpv1alpha1.McpTool) bool {
	want, wantOK := srv.Labels[mcpv1alpha1.LabelShardKey]
	got, gotOK := t.Labels[mcpv1alpha1.LabelShardKey]
	return want != got || wantOK != gotOK
}

// WithinCeiling reports whether a data class is at or below a caller's
// ceiling. A class that is not one of the four ranks as Restricted.
func WithinCeiling(class, ceiling mcpv1alpha1.DataClass) bool {
	if !class.Valid() {
		class = mcpv1alpha1.DataClassRestricted
	}
	return class.Rank() <= ceiling.Rank()
}

// Collectable reports whether the operator may delete a tool on its own
// (its server stopped offering it, or is gone): it is disabled, not being
// deleted, and no one but the operator ever declared it. An enabled tool,
// or one Git, kubectl or kubectl mcp declared, records a person's decision
// and is kept.
func Collectable(t *mcpv1alpha1.McpTool) bool {
	return !t.Spec.Enabled && t.DeletionTimestamp.IsZero() && !DeclaredElsewhere(t)
}

// DeclaredElsewhere reports whether a manager other than the operator's
// own holds spec fields of the tool: Git, kubectl or kubectl mcp declared
// it. Deleting such a tool would only make Argo CD or Flux create it again.
func DeclaredElsewhere(t *mcpv1alpha1.McpTool) bool {
	for _, mf := range t.ManagedFields {
		if DeclaresSpec(mf) {
			return true
		}
	}
	return false
}

// DeclaresSpec reports whether a managed-fields entry is a person's or
// Git's declaration of spec fields.
func DeclaresSpec(mf metav1.ManagedFieldsEntry) bool {
	if ownManagers[mf.Manager] || mf.Subresource != "" || mf.FieldsV1 == nil {
		return false
	}
	return bytes.Contains(mf.FieldsV1.GetRawBytes(), []byte(`"f:spec"`))
}
