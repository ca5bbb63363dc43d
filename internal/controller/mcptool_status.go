package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	mcpac "github.com/mcp-catalog/operator/api/applyconfiguration/api/v1alpha1"
	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// toolView is what the tool controller owns of an McpTool's status.
type toolView struct {
	LocalName                 string
	Group                     string
	EffectiveDataClass        mcpv1alpha1.DataClass
	EffectiveApprovalRequired bool
	Ready                     metav1.ConditionStatus
	Reason                    string
	Message                   string
}

// computeToolView derives the tool controller's part of an McpTool's status
// from the tool and its server (nil when the server does not exist). It is
// pure and table-tested.
//
// The only approval is spec.approvedDefinitionHash, which a person or Git
// sets: enabling approves nothing, and nothing in status counts as an
// approval, so a tool deleted and created again (status empty) is not
// servable until its approval is on record again.
func computeToolView(t *mcpv1alpha1.McpTool, srv *mcpv1alpha1.McpServer) toolView {
	v := toolView{
		LocalName: toolname.LocalName(t.Spec.ServerRef.Name, t.Spec.RemoteName),
		Group:     toolname.Group(t.Spec.ServerRef.Name),
	}

	// The effective class and approval tighten the server's declaration and
	// never loosen it. Without a server, the strictest values apply.
	v.EffectiveDataClass = mcpv1alpha1.DataClassRestricted
	v.EffectiveApprovalRequired = true
	if srv != nil {
		v.EffectiveDataClass = srv.Spec.DataClass
		if t.Spec.DataClass != "" {
			v.EffectiveDataClass = mcpv1alpha1.MaxDataClass(srv.Spec.DataClass, t.Spec.DataClass)
		}
		serverApproval := srv.Spec.ApprovalRequired == nil || *srv.Spec.ApprovalRequired
		toolApproval := t.Spec.ApprovalRequired != nil && *t.Spec.ApprovalRequired
		v.EffectiveApprovalRequired = serverApproval || toolApproval
	}

	imported := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionImported)
	wantName, nameErr := toolname.ObjectName(t.Spec.ServerRef.Name, t.Spec.RemoteName)
	switch {
	case nameErr != nil || wantName != t.Name:
		v.Ready, v.Reason = metav1.ConditionFalse, mcpv1alpha1.ReasonNameMismatch
		v.Message = "the object's name must be " + wantName + " (see docs/naming.md); this object is never served"
		if nameErr != nil {
			v.Message = "the server or remote name cannot form an McpTool name (see docs/naming.md); this object is never served"
		}
	case !t.Spec.Enabled:
		v.Ready, v.Reason, v.Message = metav1.ConditionFalse, mcpv1alpha1.ReasonDisabled, "the tool is not enabled (spec.enabled)"
	case srv == nil:
		v.Ready, v.Reason, v.Message = metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotFound, "McpServer "+t.Spec.ServerRef.Name+" does not exist"
	case imported == nil:
		v.Ready, v.Reason, v.Message = metav1.ConditionFalse, mcpv1alpha1.ReasonNotImported, "no import has seen this tool yet"
	case imported.Status != metav1.ConditionTrue:
		v.Ready, v.Reason, v.Message = metav1.ConditionFalse, imported.Reason, imported.Message
	case t.Spec.ApprovedDefinitionHash == "":
		v.Ready, v.Reason = metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionNotApproved
		v.Message = "no definition is approved; review the definition and set spec.approvedDefinitionHash to " + t.Status.DefinitionHash + " (or run kubectl mcp approve) to serve it"
	case t.Spec.ApprovedDefinitionHash != t.Status.DefinitionHash:
		v.Ready, v.Reason = metav1.ConditionFalse, mcpv1alpha1.ReasonDefinitionChanged
		v.Message = "the tool's definition differs from the approved one; review it and set spec.approvedDefinitionHash to " + t.Status.DefinitionHash + " to serve it again"
	case !meta.IsStatusConditionTrue(srv.Status.Conditions, mcpv1alpha1.ConditionReady):
		v.Ready, v.Reason, v.Message = metav1.ConditionFalse, mcpv1alpha1.ReasonServerNotReady, "McpServer "+srv.Name+" is not Ready"
	default:
		v.Ready, v.Reason, v.Message = metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded, "enabled, imported, approved and its server is Ready"
	}
	return v
}

// toolViewCurrent reports whether the tool's status already shows v.
func toolViewCurrent(t *mcpv1alpha1.McpTool, v toolView) bool {
	s := t.Status
	if s.ObservedGeneration != t.Generation || s.LocalName != v.LocalName || s.Group != v.Group ||
		s.EffectiveDataClass != v.EffectiveDataClass || s.EffectiveApprovalRequired == nil ||
		*s.EffectiveApprovalRequired != v.EffectiveApprovalRequired ||
		s.Effect != mcpv1alpha1.EffectNonIdempotentWrite || !s.RequiresAdmin {
		return false
	}
	c := meta.FindStatusCondition(s.Conditions, mcpv1alpha1.ConditionReady)
	return c != nil && c.Status == v.Ready && c.Reason == v.Reason && c.Message == v.Message && c.ObservedGeneration == t.Generation
}

// addToolView adds a view of t to a status write: the fields the tool
// controller owns and the Ready condition, whose transition time stays when
// its status does not change. The tool controller writes it, and the
// importer writes it with every status write of its own, so that a tool's
// first status is complete.
func addToolView(s *mcpac.McpToolStatusApplyConfiguration, t *mcpv1alpha1.McpTool, v toolView, now time.Time) {
	ltt := metav1.NewTime(now.Truncate(time.Second))
	if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil && c.Status == v.Ready {
		ltt = c.LastTransitionTime
	}
	s.WithObservedGeneration(t.Generation).
		WithLocalName(v.LocalName).
		WithGroup(v.Group).
		WithEffectiveDataClass(v.EffectiveDataClass).
		WithEffectiveApprovalRequired(v.EffectiveApprovalRequired).
		WithEffect(mcpv1alpha1.EffectNonIdempotentWrite).
		WithRequiresAdmin(true).
		WithConditions(metav1ac.Condition().
			WithType(mcpv1alpha1.ConditionReady).
			WithStatus(v.Ready).
			WithReason(v.Reason).
			WithMessage(v.Message).
			WithObservedGeneration(t.Generation).
			WithLastTransitionTime(ltt))
}
