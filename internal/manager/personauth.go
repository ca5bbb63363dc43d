package manager

import (
	"crypto/rand"
	"fmt"

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
	a, err := personauth.New(personauth.Options{
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
