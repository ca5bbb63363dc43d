package chart

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mcp-catalog/operator/internal/oauthresource"
)

const oauthValues = `
gateway:
  enabled: true
  tls:
    secretName: gateway-tls
  oauth:
    resource: https://mcp.example.com/mcp
    scopes: [mcp.tools, mcp.approvals]
    issuers:
    - url: https://keycloak.example.com/realms/platform
      claimMappings:
        username: {claim: email, prefix: ""}
        groups: {claim: groups, prefix: "oidc:"}
    - url: https://login.example.org/tenant-a/v2.0
      audiences: [api://mcp-gateway]
    consentSignIn:
      clientID: mcp-gateway-consent
      issuer: https://keycloak.example.com/realms/platform
      secretName: consent-signin
`

// checkGatewayOAuth: the gateway is given the resource, the scopes and
// the issuers file, mounted from a ConfigMap whose content the manager's
// own parser and checks accept, and its pods roll when the issuers change.
func checkGatewayOAuth(t *testing.T, objs []*unstructured.Unstructured) {
	d, c := gatewayDeployment(t, objs)
	if d == nil {
		t.Fatal("no gateway rendered")
	}
	f := flags(t, c)
	const path = "/etc/mcp-catalog-operator/gateway-oauth/issuers.yaml"
	if f["--gateway-oauth-resource"] != "https://mcp.example.com/mcp" || f["--gateway-oauth-issuers-file"] != path ||
		f["--gateway-oauth-scopes"] != "mcp.tools,mcp.approvals" {
		t.Errorf("gateway OAuth flags: %v", f)
	}
	// The sign-in client for consent links (ADR 063), its secret mounted
	// from the administrator's Secret.
	const secretPath = "/etc/mcp-catalog-operator/gateway-consent-signin/client-secret"
	if f["--gateway-consent-signin-client-id"] != "mcp-gateway-consent" || f["--gateway-consent-signin-issuer"] != "https://keycloak.example.com/realms/platform" ||
		f["--gateway-consent-signin-client-secret-file"] != secretPath {
		t.Errorf("consent sign-in flags: %v", f)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "gateway-consent-signin" && m.MountPath+"/client-secret" == secretPath && m.ReadOnly
	}) || !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "gateway-consent-signin" && v.Secret != nil && v.Secret.SecretName == "consent-signin" &&
			len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "client-secret" && v.Secret.Items[0].Path == "client-secret"
	}) {
		t.Errorf("the sign-in client's secret is not mounted at %s", secretPath)
	}
	_, mc := manager(t, objs)
	if _, ok := flags(t, mc)["--gateway-oauth-resource"]; ok {
		t.Error("the controllers are given the gateway's OAuth flags")
	}
	cm := one[corev1.ConfigMap](t, objs, "ConfigMap", fullname+"-oauth-issuers")
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "gateway-oauth" && m.MountPath+"/issuers.yaml" == path && m.ReadOnly
	}) {
		t.Errorf("the issuers are not mounted at %s: %+v", path, c.VolumeMounts)
	}
	if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "gateway-oauth" && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name
	}) {
		t.Errorf("no volume of the ConfigMap %s", cm.Name)
	}
	if d.Spec.Template.Annotations["checksum/gateway-oauth"] == "" {
		t.Error("the gateway's pods do not roll when the issuers change")
	}
	issuers, err := oauthresource.ParseIssuers([]byte(cm.Data["issuers.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	o := oauthresource.DefaultOptions()
	o.Resource, o.Scopes, o.Issuers = f["--gateway-oauth-resource"], []string{"mcp.tools", "mcp.approvals"}, issuers
	if err := o.Validate(); err != nil {
		t.Errorf("the rendered configuration is refused: %v", err)
	}
	if len(issuers) != 2 || issuers[0].URL != "https://keycloak.example.com/realms/platform" || *issuers[0].ClaimMappings.Groups.Prefix != "oidc:" ||
		issuers[0].ClaimMappings.Username.Prefix == nil || *issuers[0].ClaimMappings.Username.Prefix != "" ||
		!slices.Equal(issuers[1].Audiences, []string{"api://mcp-gateway"}) {
		t.Errorf("issuers: %+v", issuers)
	}
}
