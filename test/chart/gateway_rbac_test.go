package chart

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/test/controlplane"
	"github.com/mcp-catalog/operator/test/poll"
)

// TestGatewayRBACWithWatchNamespaces applies the RBAC the chart renders for
// a gateway limited to two namespaces to a real API server (which
// authorises with RBAC), and acts as the gateway's ServiceAccount: it must
// be able to create TokenReviews and SubjectAccessReviews, which are
// cluster-scoped and so cannot come from the per-namespace RoleBindings,
// and read McpTools in a watched namespace but not in another one.
func TestGatewayRBACWithWatchNamespaces(t *testing.T) {
	helmBinary(t)
	cfg := startAPIServer(t).Config
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespaces(ctx, t, admin, releaseNS, "team-a", "team-b", "elsewhere")

	// Metrics are off so that nothing but the gateway's own bindings can
	// grant the reviews (the metrics binding names the manager anyway).
	values := "watchNamespaces: [team-a, team-b]\nmetrics:\n  enabled: false\ngateway:\n  enabled: true\n  tls:\n    secretName: gw-tls\n"
	applied := 0
	for _, o := range render(t, values, floorKubeVersion) {
		if !slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind()) {
			continue
		}
		if err := admin.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), nsName(o), err)
		}
		applied++
	}
	if applied == 0 {
		t.Fatal("the chart rendered no RBAC")
	}

	gw := clientAs(t, cfg, fullname+"-gateway")

	// RBAC grants take a moment to reach the authorizer's cache.
	poll.Until(t, 30*time.Second, "the gateway's ServiceAccount allowed to review", func() error {
		_, errTR := gw.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token", Audiences: []string{"mcp-catalog-gateway"}},
		}, metav1.CreateOptions{})
		_, errSAR := gw.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:team-a:agent",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "call", Group: "mcp.catalog.dev", Resource: "mcptools", Name: "docs.echo"},
			},
		}, metav1.CreateOptions{})
		if errTR != nil {
			return fmt.Errorf("TokenReview: %w", errTR)
		}
		if errSAR != nil {
			return fmt.Errorf("SubjectAccessReview: %w", errSAR)
		}
		return nil
	})

	// Reads are limited to the watched namespaces.
	can := func(ns, verb, group, resource string) bool {
		t.Helper()
		r, err := gw.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("self review: %v", err)
		}
		return r.Status.Allowed
	}
	for _, ns := range []string{"team-a", "team-b"} {
		for _, res := range []string{"mcptools", "mcpservers", "mcpaccesspolicies", "mcpdelegationprofiles"} {
			if !can(ns, "watch", "mcp.catalog.dev", res) {
				t.Errorf("the gateway cannot watch %s in %s", res, ns)
			}
		}
		if !can(ns, "get", "", "secrets") || can(ns, "list", "", "secrets") {
			t.Errorf("in %s the gateway must get Secrets by name and never list them", ns)
		}
		// People's authorizations of per-person servers (ADR 056).
		if !can(ns, "create", "", "secrets") || !can(ns, "update", "", "secrets") || can(ns, "delete", "", "secrets") {
			t.Errorf("in %s the gateway must create and update Secrets, and never delete them", ns)
		}
	}
	if can("elsewhere", "create", "", "secrets") {
		t.Error("the gateway can create Secrets in a namespace it does not watch")
	}
	if can("elsewhere", "list", "mcp.catalog.dev", "mcptools") {
		t.Error("the gateway can list McpTools in a namespace it does not watch")
	}
	if can("team-a", "update", "mcp.catalog.dev", "mcptools") || can("team-a", "update", "mcp.catalog.dev", "mcpservers") {
		t.Error("the gateway can change McpTools or McpServers; it only reads them")
	}
	// Without reading the admission policy and its bindings the gateway
	// uses no approval; they are cluster-scoped.
	if !can("", "get", "admissionregistration.k8s.io", "validatingadmissionpolicies") || !can("", "list", "admissionregistration.k8s.io", "validatingadmissionpolicybindings") {
		t.Error("the gateway cannot read the admission policy and its bindings")
	}
	if can("", "update", "admissionregistration.k8s.io", "validatingadmissionpolicies") {
		t.Error("the gateway can change admission policies; it only reads them")
	}
}

// TestGatewaySweepsApprovalsWithWatchNamespaces runs the gateway's approval
// sweeper as the gateway's ServiceAccount under the RBAC the chart renders
// for watchNamespaces: it deletes an expired approval of a watched
// namespace, leaves one of a namespace it does not watch, and a sweeper
// that lists cluster-wide (as every gateway did) is forbidden and deletes
// nothing.
func TestGatewaySweepsApprovalsWithWatchNamespaces(t *testing.T) {
	helmBinary(t)
	plane := controlplane.Start(t)
	cfg, admin := plane.Config, plane.Client
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ensureNamespaces(ctx, t, admin, releaseNS, "team-a", "team-b", "elsewhere")
	values := "watchNamespaces: [team-a, team-b]\nmetrics:\n  enabled: false\ngateway:\n  enabled: true\n  tls:\n    secretName: gw-tls\n"
	for _, o := range render(t, values, floorKubeVersion) {
		if !slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind()) {
			continue
		}
		if err := admin.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), nsName(o), err)
		}
	}
	expired := func(ns string) *mcpv1alpha1.McpCallApproval {
		a := &mcpv1alpha1.McpCallApproval{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call-old"},
			Spec: mcpv1alpha1.McpCallApprovalSpec{Tool: "docs.echo", LocalName: "mcp_docs_echo", Server: "docs", Caller: "system:serviceaccount:" + ns + ":agent",
				DataClass: mcpv1alpha1.DataClassPublic, ArgumentsHash: "sha256:" + strings.Repeat("a", 64), DefinitionHash: "sha256:d",
				ExpiresAt: metav1.NewTime(time.Now().Add(-3 * time.Hour).Truncate(time.Second)), Seal: "s"},
		}
		if err := admin.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	watched, other := expired("team-a"), expired("elsewhere")

	asGateway := rest.CopyConfig(cfg)
	asGateway.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + releaseNS + ":" + fullname + "-gateway",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"},
	}
	gw, err := client.New(asGateway, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	sweeper := &approvals.Sweeper{Client: gw, Namespaces: []string{"team-a", "team-b"}}
	// RBAC grants take a moment to reach the authorizer's cache.
	var swept int
	poll.Until(t, 30*time.Second, "the gateway allowed to sweep the watched namespaces", func() error {
		n, err := sweeper.Sweep(ctx)
		swept = n
		return err
	})
	if swept != 1 {
		t.Fatalf("the sweep deleted %d approvals, want the one expired in team-a", swept)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(watched), &mcpv1alpha1.McpCallApproval{}); !apierrors.IsNotFound(err) {
		t.Errorf("the expired approval in team-a is still there: %v", err)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(other), &mcpv1alpha1.McpCallApproval{}); err != nil {
		t.Errorf("the approval of a namespace the gateway does not watch: %v", err)
	}
	// Once the grants are in effect, a cluster-wide sweep is still
	// refused: that is how every gateway swept before.
	clusterWide := &approvals.Sweeper{Client: gw}
	if n, err := clusterWide.Sweep(ctx); !apierrors.IsForbidden(errors.Unwrap(err)) || n != 0 {
		t.Fatalf("a cluster-wide sweep as the gateway: %d deleted, error %v; want it forbidden", n, err)
	}
}

// clientAs is a client of cfg's API server acting as the ServiceAccount
// name of the release's namespace.
func clientAs(t *testing.T, cfg *rest.Config, name string) *kubernetes.Clientset {
	t.Helper()
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + releaseNS + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"},
	}
	c, err := kubernetes.NewForConfig(as)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
