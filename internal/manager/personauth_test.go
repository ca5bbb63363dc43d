package manager

import (
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// The sign-in client's issuer is one of the gateway's OAuth issuers, whose
// claim mappings name people: the only one when none is named.
func TestConsentSignInIssuer(t *testing.T) {
	one := Options{GatewayOAuth: oauthresource.Options{Issuers: []oauthresource.Issuer{{URL: "https://a.example.test"}}}}
	if s, err := consentSignIn(one); err != nil || s != nil {
		t.Fatalf("without a client: %v, %v", s, err)
	}
	one.GatewayConsentSignIn.ClientID = "gw"
	if s, err := consentSignIn(one); err != nil || s.Issuer.URL != "https://a.example.test" || s.ClientID != "gw" {
		t.Fatalf("the only issuer: %+v, %v", s, err)
	}
	two := one
	two.GatewayOAuth.Issuers = append(two.GatewayOAuth.Issuers, oauthresource.Issuer{URL: "https://b.example.test"})
	if _, err := consentSignIn(two); err == nil || !strings.Contains(err.Error(), "--gateway-consent-signin-issuer") {
		t.Fatalf("two issuers, none named: %v", err)
	}
	two.GatewayConsentSignIn.Issuer = "https://b.example.test"
	if s, err := consentSignIn(two); err != nil || s.Issuer.URL != "https://b.example.test" {
		t.Fatalf("the named issuer: %+v, %v", s, err)
	}
	two.GatewayConsentSignIn.Issuer = "https://c.example.test"
	if _, err := consentSignIn(two); err == nil {
		t.Fatal("an issuer the gateway does not trust is accepted")
	}
}
