package cli

import (
	"context"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
	"github.com/mcp-catalog/operator/internal/toolname"
)

// Reasons of the rows of shared tools that no McpTool condition gives:
// the consuming namespace's own narrowing, and what the person listing
// may not read.
const (
	// reasonAboveSharedCeiling: the tool's class is above the
	// McpSharedServer's spec.maxDataClass; no agent here is offered it.
	reasonAboveSharedCeiling = "AboveMaxDataClass"
	// reasonOwnerNotReadable: the person listing may not read the owner's
	// McpServer or McpTools; the gateway reads them, the table cannot.
	reasonOwnerNotReadable = "OwnerNotReadable"
)

// sharedToolRows are the rows of the tools other namespaces share with ns
// through its McpSharedServers, as its agents are offered them: under
// mcps_<McpSharedServer>_<remote name>, with the owner's class and
// approval, tightened by the consumer. A server the person listing may not
// read is one row that says so; the McpSharedServers themselves are
// listed with the caller's credentials like everything else.
func sharedToolRows(ctx context.Context, c client.Client, ns string) ([]toolRow, error) {
	var shared mcpv1alpha1.McpSharedServerList
	if err := c.List(ctx, &shared, client.InNamespace(ns)); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			// An operator older than shared catalogs.
			return nil, nil
		}
		return nil, clusterError(err, "listing McpSharedServers")
	}
	sort.Slice(shared.Items, func(i, j int) bool { return shared.Items[i].Name < shared.Items[j].Name })
	var rows []toolRow
	for i := range shared.Items {
		ss := &shared.Items[i]
		owner := ss.Spec.Server
		srv := &mcpv1alpha1.McpServer{}
		var tools mcpv1alpha1.McpToolList
		err := c.Get(ctx, types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}, srv)
		if err == nil {
			err = c.List(ctx, &tools, client.InNamespace(owner.Namespace), client.MatchingLabels{mcpv1alpha1.LabelServer: owner.Name})
		}
		if err != nil {
			reason := reasonOwnerNotReadable
			if apierrors.IsNotFound(err) {
				reason = mcpv1alpha1.ReasonNotShared
			} else if !apierrors.IsForbidden(err) {
				return nil, clusterError(err, "reading the shared McpServer "+owner.Namespace+"/"+owner.Name)
			}
			rows = append(rows, toolRow{Namespace: ns, Name: owner.Namespace + "/" + owner.Name, LocalName: toolname.SharedLocalName(ss.Name, "*"),
				Server: ss.Name, Ready: "Unknown", Reason: reason, Message: "the owner's McpServer and McpTools cannot be read with your credentials"})
			continue
		}
		sharedReady := meta.FindStatusCondition(ss.Status.Conditions, mcpv1alpha1.ConditionReady)
		sort.Slice(tools.Items, func(i, j int) bool { return tools.Items[i].Name < tools.Items[j].Name })
		for j := range tools.Items {
			rows = append(rows, sharedToolRow(ns, ss, sharedReady, srv, &tools.Items[j]))
		}
	}
	return rows, nil
}

// sharedToolRow is one shared tool as the consuming namespace receives it.
// Its Ready is the McpSharedServer's when that is not True, then the
// consumer's narrowing, then the owner's McpTool's.
func sharedToolRow(ns string, ss *mcpv1alpha1.McpSharedServer, sharedReady *metav1.Condition, srv *mcpv1alpha1.McpServer, t *mcpv1alpha1.McpTool) toolRow {
	class, approval := governance.SharedEffective(srv, t, ss)
	disabledHere := governance.DisabledByConsumer(ss, t.Spec.RemoteName)
	r := toolRow{
		Namespace: ns, Name: t.Namespace + "/" + t.Name, LocalName: toolname.SharedLocalName(ss.Name, t.Spec.RemoteName),
		Server: ss.Name, RemoteName: t.Spec.RemoteName, Enabled: t.Spec.Enabled && !disabledHere,
		DataClass: string(class), Approval: approval, Ready: "Unknown", DefinitionHash: t.Status.DefinitionHash,
	}
	ceiling := ss.Spec.MaxDataClass
	switch {
	case sharedReady == nil:
	case sharedReady.Status != "True":
		r.Ready, r.Reason, r.Message = string(sharedReady.Status), sharedReady.Reason, sharedReady.Message
	case disabledHere:
		r.Ready, r.Reason, r.Message = "False", mcpv1alpha1.ReasonDisabledByConsumer, "this namespace's McpSharedServer lists the tool in spec.disabledTools"
	case ceiling.Valid() && class.Rank() > ceiling.Rank():
		r.Ready, r.Reason, r.Message = "False", reasonAboveSharedCeiling, "the tool's data class is above this namespace's McpSharedServer spec.maxDataClass"
	default:
		if c := meta.FindStatusCondition(t.Status.Conditions, mcpv1alpha1.ConditionReady); c != nil {
			r.Ready, r.Reason, r.Message = string(c.Status), c.Reason, c.Message
		}
	}
	return r
}
