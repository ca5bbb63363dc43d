package manager

import (
	"crypto/rand"
	"fmt"
	"net/http"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/gateway/approvals"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
)

// newPersonAuth builds the gateway's holder of people's authorizations of
// per-person servers (ADR 056), or nil when no callback URL is
// configured. Its state key is derived from the approval key; without an
// approval key Secret each process has a key of its own, and a consent
// link works only on the replica that made it.
func newPersonAuth(c client.Client, keys approvals.KeySource, opts Options, clk clock.PassiveClock) (*personauth.Authorizer, error) {
	if opts.GatewayCallbackURL == "" {
		return nil, nil
	}
	if keys == nil {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		keys = approvals.StaticKeys{Current: key}
	}
	signIn, err := consentSignIn(opts)
	if err != nil {
		return nil, err
	}
	a, err := personauth.New(personauth.Options{
		SignIn:      signIn,
		Client:      c,
		Keys:        keys,
		CallbackURL: opts.GatewayCallbackURL,
		Egress: egress.Policy{
			AllowAllPrivate: opts.AllowPrivateNetworks,
			PrivateCIDRs:    opts.AllowedPrivateCIDRs,
			NamespaceCIDRs:  opts.NamespacePrivateCIDRs,
		},
		RootCAs: opts.GatewayPersonAuthRootCAs,
		Clock:   clk,
	})
	if err != nil {
		return nil, fmt.Errorf("configuring per-person authorization: %w", err)
	}
	return a, nil
}

// ConsentSignIn is the gateway's OpenID Connect client for consent links.
type ConsentSignIn struct {
	// Issuer is the issuer URL of GatewayOAuth people sign in at; empty
	// when GatewayOAuth has exactly one.
	Issuer string
	// ClientID and ClientSecret: the client registered there, with the
	// callback URL as its redirect URI; no secret is a public client.
	ClientID, ClientSecret string
	// Transport reaches the issuer (tests); nil trusts its
	// certificateAuthority or the system roots.
	Transport http.RoundTripper
}

// consentSignIn is the sign-in of the options, nil when no client is
// configured; an issuer that is not one of the gateway's is an error.
func consentSignIn(opts Options) (*personauth.SignIn, error) {
	s := opts.GatewayConsentSignIn
	if s.ClientID == "" {
		return nil, nil
	}
	issuers := opts.GatewayOAuth.Issuers
	if s.Issuer == "" {
		if len(issuers) != 1 {
			return nil, fmt.Errorf("the consent sign-in client needs its issuer named (--gateway-consent-signin-issuer): the gateway trusts %d issuers", len(issuers))
		}
		s.Issuer = issuers[0].URL
	}
	for _, is := range issuers {
		if is.URL == s.Issuer {
			return &personauth.SignIn{Issuer: is, ClientID: s.ClientID, ClientSecret: s.ClientSecret, Transport: s.Transport}, nil
		}
	}
	return nil, fmt.Errorf("the consent sign-in issuer %q is not one of the gateway's OAuth issuers (--gateway-oauth-issuers-file)", s.Issuer)
}
