package chart

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// configPolicy reads the objects of config/policy/<file>.
func configPolicy(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile("../../config/policy/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
}

// TestApprovalPolicyMatchesConfig checks that the chart's admission policy
// for McpCallApprovals and its approver role are the ones config/ ships:
// the rules that keep a caller from approving itself must not differ by
// installation method.
func TestApprovalPolicyMatchesConfig(t *testing.T) {
	cfg := configPolicy(t, "call_approvals.yaml")
	objs := render(t, "", floorKubeVersion)
	samePolicy(t, objs, cfg, fullname+"-call-approvals")

	wantRole := convert[rbacv1.ClusterRole](t, byKind(cfg, "ClusterRole")[0])
	var found bool
	for _, u := range byKind(objs, "ClusterRole") {
		if u.GetName() == fullname+"-call-approver" {
			found = true
			if r := convert[rbacv1.ClusterRole](t, u); !reflect.DeepEqual(r.Rules, wantRole.Rules) {
				t.Errorf("approver rules %+v, config/policy %+v", r.Rules, wantRole.Rules)
			}
		}
	}
	if !found {
		t.Error("the chart renders no call-approver ClusterRole")
	}
}

// samePolicy checks that the chart (objs) renders the admission policy
// named name as config/policy (cfg) has it, and binds it to deny.
func samePolicy(t *testing.T, objs, cfg []*unstructured.Unstructured, name string) {
	t.Helper()
	wantPolicy := convert[admissionv1.ValidatingAdmissionPolicy](t, byKind(cfg, "ValidatingAdmissionPolicy")[0])
	var gotPolicy *admissionv1.ValidatingAdmissionPolicy
	for _, u := range byKind(objs, "ValidatingAdmissionPolicy") {
		if u.GetName() == name {
			gotPolicy = convert[admissionv1.ValidatingAdmissionPolicy](t, u)
		}
	}
	if gotPolicy == nil {
		t.Fatalf("the chart renders no admission policy %s", name)
	}
	if !reflect.DeepEqual(gotPolicy.Spec, wantPolicy.Spec) {
		t.Errorf("the chart's policy %s differs from config/policy:\nchart:  %+v\nconfig: %+v", name, gotPolicy.Spec, wantPolicy.Spec)
	}
	var bound bool
	for _, u := range byKind(objs, "ValidatingAdmissionPolicyBinding") {
		b := convert[admissionv1.ValidatingAdmissionPolicyBinding](t, u)
		if b.Spec.PolicyName == name {
			bound = true
			if !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
				t.Errorf("binding %s of %s: actions %v, want [Deny]", b.Name, name, b.Spec.ValidationActions)
			}
		}
	}
	if !bound {
		t.Errorf("the chart does not bind the admission policy %s", name)
	}
}

// TestSharingLabelsPolicyMatchesConfig: the policy that reserves the
// sharing label prefix to administrators is the same by either installation
// method, and the chart passes the prefix to the controllers and the
// gateway when told to restrict selectors to it.
func TestSharingLabelsPolicyMatchesConfig(t *testing.T) {
	objs := render(t, "", floorKubeVersion)
	samePolicy(t, objs, configPolicy(t, "namespace_labels.yaml"), fullname+"-sharing-labels")
	for _, u := range byKind(objs, "Deployment") {
		if d := convert[appsv1.Deployment](t, u); slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--sharing-selector-key-prefix") }) {
			t.Errorf("%s restricts sharing selectors by default", d.Name)
		}
	}
	objs = render(t, "sharing:\n  restrictSelectors: true\ngateway:\n  enabled: true\n  tls:\n    secretName: tls\n", floorKubeVersion)
	deployments := byKind(objs, "Deployment")
	if len(deployments) < 2 {
		t.Fatalf("%d Deployments rendered, want the controllers' and the gateway's", len(deployments))
	}
	for _, u := range deployments {
		if d := convert[appsv1.Deployment](t, u); !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--sharing-selector-key-prefix=sharing.mcp.catalog.dev/") {
			t.Errorf("%s is not told the reserved prefix: %v", d.Name, d.Spec.Template.Spec.Containers[0].Args)
		}
	}
	objs = render(t, "sharing:\n  reservedLabelPrefix: \"\"\n", floorKubeVersion)
	for _, u := range byKind(objs, "ValidatingAdmissionPolicy") {
		if strings.HasSuffix(u.GetName(), "-sharing-labels") {
			t.Error("a sharing-labels policy rendered without a reserved prefix")
		}
	}
}

// TestGatewayReadsItsApprovalKeySecret checks that an enabled gateway is
// told which Secret holds the approval keys, that the chart creates it
// when none is named, and that the manager may read exactly that Secret.
func TestGatewayReadsItsApprovalKeySecret(t *testing.T) {
	for _, c := range []struct {
		name, values, secret string
		created              bool
	}{
		{"generated", "gateway:\n  enabled: true\n  tls:\n    secretName: tls\n", fullname + "-approval-key", true},
		{"named", "gateway:\n  enabled: true\n  approvalKeySecret: shared-keys\n  tls:\n    secretName: tls\n", "shared-keys", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := render(t, c.values, floorKubeVersion)
			d := convert[appsv1.Deployment](t, byKind(objs, "Deployment")[0])
			if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--gateway-approval-key-secret="+releaseNS+"/"+c.secret) {
				t.Errorf("manager args %v do not name the key Secret %s/%s", args, releaseNS, c.secret)
			}
			var created bool
			for _, s := range byKind(objs, "Secret") {
				if s.GetName() == c.secret {
					created = true
					data, _, _ := unstructured.NestedMap(s.Object, "data")
					if _, ok := data["current"]; !ok {
						t.Error("the generated key Secret has no current key")
					}
				}
			}
			if created != c.created {
				t.Errorf("key Secret created: %v, want %v", created, c.created)
			}
			var readable bool
			for _, u := range byKind(objs, "Role") {
				r := convert[rbacv1.Role](t, u)
				for _, rule := range r.Rules {
					if coversSecrets(rule) && slices.Equal(rule.ResourceNames, []string{c.secret}) && slices.Equal(rule.Verbs, []string{"get"}) && r.Namespace == releaseNS {
						readable = true
					}
				}
			}
			if !readable {
				t.Errorf("no Role in %s lets the manager get the Secret %s", releaseNS, c.secret)
			}
		})
	}
}

// TestControllersReadTheApprovalKeyToAnnounceSealedApprovals: with a
// webhook and the gateway, the controllers that notify about call
// approvals are told the gateway's key Secret and may read it, so that
// they announce only the approvals the gateway sealed; without a webhook
// they have no right to it.
func TestControllersReadTheApprovalKeyToAnnounceSealedApprovals(t *testing.T) {
	const gw = "gateway:\n  enabled: true\n  tls:\n    secretName: tls\n"
	const hook = "notifications:\n  webhook:\n    url: https://hooks.example.com/mcp\n    secretName: mcp-notify\n"
	managerReads := func(objs []*unstructured.Unstructured) bool {
		b := one[rbacv1.RoleBinding](t, objs, "RoleBinding", fullname+"-approval-key")
		return slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == fullname })
	}
	objs := render(t, gw+hook, floorKubeVersion)
	_, c := manager(t, objs)
	if got := flags(t, c)["--gateway-approval-key-secret"]; got != releaseNS+"/"+fullname+"-approval-key" {
		t.Errorf("the controllers' --gateway-approval-key-secret=%q", got)
	}
	if !managerReads(objs) {
		t.Error("the controllers may not read the approval key Secret")
	}
	objs = render(t, gw, floorKubeVersion)
	if managerReads(objs) {
		t.Error("the controllers may read the approval key Secret without a webhook to notify")
	}
}
