package chart

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/test/poll"
)

// poolsValues deploys the gateway as two pools that both serve the
// namespace of the servers they share (docs/adr/036-gateway-pools.md).
const poolsValues = `
gateway:
  enabled: true
  tls:
    secretName: gateway-serving-cert
  autoscaling:
    enabled: true
  pools:
    - name: east
      namespaces: [team-a, platform]
    - name: west
      namespaces: [team-b, platform]
networkPolicy:
  enabled: true
`

// poolNamespaces are the namespaces each pool of poolsValues serves.
var poolNamespaces = map[string][]string{
	"east": {"team-a", "platform"},
	"west": {"team-b", "platform"},
}

// checkGatewayPools: one gateway per pool, each watching its pool's
// namespaces, reachable through its own Service, kept by its own budget
// and autoscaler, reading McpTools through RoleBindings in its namespaces
// only; no gateway for the rest, and no ClusterRoleBinding that would let
// a pool read McpTools of every namespace.
func checkGatewayPools(t *testing.T, objs []*unstructured.Unstructured) {
	for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		if find(objs, kind, fullname+"-gateway") != nil {
			t.Errorf("the single gateway's %s is rendered beside the pools", kind)
		}
	}
	ds, _ := gatewayDeployments(t, objs)
	if len(ds) != len(poolNamespaces) {
		t.Fatalf("rendered %d gateway Deployments, want one per pool (%d)", len(ds), len(poolNamespaces))
	}
	pods := map[string]map[string]string{}
	for pool, namespaces := range poolNamespaces {
		name := fullname + "-gateway-" + pool
		d := one[appsv1.Deployment](t, objs, "Deployment", name)
		c := d.Spec.Template.Spec.Containers[0]
		f := flags(t, &c)
		if f["--components"] != "gateway" {
			t.Errorf("pool %s runs --components=%q", pool, f["--components"])
		}
		if got := f["--watch-namespaces"]; got != strings.Join(namespaces, ",") {
			t.Errorf("pool %s watches %q, want %q", pool, got, strings.Join(namespaces, ","))
		}
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != name {
			t.Errorf("pool %s runs as %q, want its own ServiceAccount %q", pool, sa, name)
		}
		if find(objs, "ServiceAccount", name) == nil {
			t.Errorf("pool %s: no ServiceAccount", pool)
		}
		pods[pool] = d.Spec.Template.Labels

		hpa := one[autoscalingv2.HorizontalPodAutoscaler](t, objs, "HorizontalPodAutoscaler", name)
		if hpa.Spec.ScaleTargetRef.Name != name {
			t.Errorf("pool %s: the autoscaler scales %q", pool, hpa.Spec.ScaleTargetRef.Name)
		}

		// Its read role is bound in exactly its namespaces.
		var bound []string
		for _, u := range byKind(objs, "RoleBinding") {
			rb := convert[rbacv1.RoleBinding](t, u)
			if slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Name == name }) && rb.RoleRef.Name == fullname+"-gateway" {
				bound = append(bound, rb.Namespace)
			}
		}
		slices.Sort(bound)
		want := slices.Clone(namespaces)
		slices.Sort(want)
		if !slices.Equal(bound, want) {
			t.Errorf("pool %s may read McpTools in %v, want %v", pool, bound, want)
		}
	}
	// Each pool's Service and budget select its own pods, never another
	// pool's: an agent reaches the gateway of its pool, and a drain of one
	// pool is not held up by another's pods.
	for pool := range poolNamespaces {
		name := fullname + "-gateway-" + pool
		svc := one[corev1.Service](t, objs, "Service", name)
		pdb := one[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", name)
		for other, labels := range pods {
			if got, want := selects(svc.Spec.Selector, labels), other == pool; got != want {
				t.Errorf("Service %s selects the pods of pool %s: %t, want %t", name, other, got, want)
			}
			if got, want := selects(pdb.Spec.Selector.MatchLabels, labels), other == pool; got != want {
				t.Errorf("PodDisruptionBudget %s selects the pods of pool %s: %t, want %t", name, other, got, want)
			}
		}
	}

	// No ClusterRoleBinding gives a pool's ServiceAccount a role that reads
	// McpTools (or anything else the gateway decides from) cluster-wide.
	for _, u := range byKind(objs, "ClusterRoleBinding") {
		crb := convert[rbacv1.ClusterRoleBinding](t, u)
		if !slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool { return isGateway(s.Name) }) {
			continue
		}
		role := one[rbacv1.ClusterRole](t, objs, "ClusterRole", crb.RoleRef.Name)
		for _, res := range []string{"mcptools", "mcpservers", "mcpsharedservers", "mcpaccesspolicies", "*"} {
			for _, verb := range []string{"get", "list", "watch", "*"} {
				if grants(role.Rules, "mcp.catalog.dev", res, verb) || grants(role.Rules, "*", res, verb) {
					t.Errorf("ClusterRoleBinding %s grants a pool %s on %s cluster-wide", crb.Name, verb, res)
				}
			}
		}
	}
}

// TestGatewayPoolGuards: the templates refuse pools that cannot work, for
// installs that skip the schema too.
func TestGatewayPoolGuards(t *testing.T) {
	base := "gateway:\n  enabled: true\n  tls:\n    secretName: t\n"
	for _, c := range []struct{ values, want string }{
		{base + "  pools:\n    - {name: east, namespaces: [a]}\n    - {name: east, namespaces: [b]}", `the pool name "east" is used twice`},
		{base + "  pools:\n    - {name: east, namespaces: [a, b]}\nwatchNamespaces: [a]", `pool "east" serves namespace "b", which is not in watchNamespaces`},
		{base + "  pools:\n    - {name: east, namespaces: []}", `pool "east" lists no namespaces`},
	} {
		_, stderr, err := helm(t, templateArgs(t, c.values, floorKubeVersion, "--skip-schema-validation")...)
		if err == nil {
			t.Errorf("rendered %q", c.values)
			continue
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%q failed without %q:\n%s", c.values, c.want, stderr)
		}
	}
}

// TestGatewayPoolRBAC applies the RBAC the chart renders for two pools to
// a real API server and acts as one pool's ServiceAccount: it reviews
// tokens and access, reads the gateway's kinds in its pool's namespaces,
// and cannot list McpTools in the other pool's namespace or cluster-wide.
func TestGatewayPoolRBAC(t *testing.T) {
	helmBinary(t)
	cfg := startAPIServer(t).Config
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespaces(ctx, t, admin, releaseNS, "team-a", "team-b", "platform")
	for _, o := range render(t, poolsValues, floorKubeVersion) {
		if !slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind()) {
			continue
		}
		if err := admin.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), fieldOwner, client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), nsName(o), err)
		}
	}
	east := clientAs(t, cfg, fullname+"-gateway-east")
	poll.Until(t, 30*time.Second, "the east pool allowed to review tokens", func() error {
		_, err := east.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token", Audiences: []string{"mcp-catalog-gateway"}},
		}, metav1.CreateOptions{})
		return err
	})
	can := func(ns, verb, resource string) bool {
		t.Helper()
		r, err := east.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "mcp.catalog.dev", Resource: resource}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("self review: %v", err)
		}
		return r.Status.Allowed
	}
	for _, ns := range poolNamespaces["east"] {
		for _, res := range []string{"mcptools", "mcpservers", "mcpsharedservers", "mcpaccesspolicies", "mcpdelegationprofiles"} {
			if !can(ns, "watch", res) {
				t.Errorf("the east pool cannot watch %s in its namespace %s", res, ns)
			}
		}
	}
	for _, ns := range []string{"team-b", ""} {
		for _, verb := range []string{"get", "list", "watch"} {
			if can(ns, verb, "mcptools") {
				t.Errorf("the east pool may %s McpTools in %q, outside its namespaces", verb, ns)
			}
		}
	}
}
