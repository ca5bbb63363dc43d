package chart

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// configPolicy reads the objects of config/policy/call_approvals.yaml.
func configPolicy(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile("../../config/policy/call_approvals.yaml")
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
	cfg := configPolicy(t)
	objs := render(t, "", floorKubeVersion)

	wantPolicy := convert[admissionv1.ValidatingAdmissionPolicy](t, byKind(cfg, "ValidatingAdmissionPolicy")[0])
	got := byKind(objs, "ValidatingAdmissionPolicy")
	if len(got) != 1 {
		t.Fatalf("the chart renders %d admission policies, want 1", len(got))
	}
	gotPolicy := convert[admissionv1.ValidatingAdmissionPolicy](t, got[0])
	if !reflect.DeepEqual(gotPolicy.Spec, wantPolicy.Spec) {
		t.Errorf("the chart's policy differs from config/policy:\nchart:  %+v\nconfig: %+v", gotPolicy.Spec, wantPolicy.Spec)
	}

	bindings := byKind(objs, "ValidatingAdmissionPolicyBinding")
	if len(bindings) != 1 {
		t.Fatalf("the chart renders %d policy bindings, want 1", len(bindings))
	}
	b := convert[admissionv1.ValidatingAdmissionPolicyBinding](t, bindings[0])
	if b.Spec.PolicyName != gotPolicy.Name || !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("binding %s: policy %q, actions %v; want %q, [Deny]", b.Name, b.Spec.PolicyName, b.Spec.ValidationActions, gotPolicy.Name)
	}

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
