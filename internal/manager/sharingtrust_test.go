package manager

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/governance"
)

// sharedReader answers as a cache read that disables deep copies does: a
// shallow copy of what it holds, pointers shared.
type sharedReader struct {
	client.Reader
	held *mcpv1alpha1.McpServer
}

func (r sharedReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	*obj.(*mcpv1alpha1.McpServer) = *r.held
	return nil
}

func (r sharedReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.(*mcpv1alpha1.McpServerList).Items = []mcpv1alpha1.McpServer{*r.held}
	return nil
}

// The gateway reads McpServers through SharingTrustReader: a selector on a
// key outside the reserved prefix is not there to grant, names still are,
// and what the cache holds is not changed.
func TestSharingTrustReaderHidesUntrustedSelectorsFromTheGateway(t *testing.T) {
	sel := func(key string) *mcpv1alpha1.McpServer {
		return &mcpv1alpha1.McpServer{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "docs"},
			Spec: mcpv1alpha1.McpServerSpec{Sharing: &mcpv1alpha1.ServerSharing{Namespaces: []string{"named"},
				NamespaceSelector: &mcpv1alpha1.NamespaceSelector{MatchExpressions: []mcpv1alpha1.NamespaceSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}}}}
	}
	trust := governance.SelectorTrust{KeyPrefix: "sharing.mcp.catalog.dev/"}
	tenantLabelled := map[string]string{"kubernetes.io/metadata.name": "tenant", "team": "docs"}

	held := sel("team")
	r := SharingTrustReader(sharedReader{held: held}, trust)
	got := &mcpv1alpha1.McpServer{}
	if err := r.Get(context.Background(), client.ObjectKey{}, got); err != nil {
		t.Fatal(err)
	}
	if governance.SharedWith(got, "tenant", tenantLabelled) || !governance.SharedWith(got, "named", nil) {
		t.Error("read through the trust, the untrusted selector still grants, or the name no longer does")
	}
	var list mcpv1alpha1.McpServerList
	if err := r.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	if governance.SharedWith(&list.Items[0], "tenant", tenantLabelled) {
		t.Error("listed through the trust, the untrusted selector still grants")
	}
	if held.Spec.Sharing.NamespaceSelector == nil {
		t.Error("the cache's object was changed")
	}

	reserved := sel("sharing.mcp.catalog.dev/team")
	got = &mcpv1alpha1.McpServer{}
	if err := SharingTrustReader(sharedReader{held: reserved}, trust).Get(context.Background(), client.ObjectKey{}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Sharing.NamespaceSelector == nil {
		t.Error("a selector on a reserved key was dropped")
	}
	if plain := (sharedReader{}); SharingTrustReader(plain, governance.SelectorTrust{}) != client.Reader(plain) {
		t.Error("without a prefix the reader is wrapped")
	}
}
