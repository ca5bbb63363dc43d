package egress

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Policy is the cluster administrator's decision about which private
// networks the operator may reach. A peer's own opt-in (an McpServer's
// spec.allowPrivateNetwork, set by whoever wrote it) can only use what this
// policy allows; without the opt-in no private address is dialled.
// Link-local and metadata addresses are refused under every policy.
type Policy struct {
	// AllowAllPrivate lets every peer reach every private range, loopback
	// included, with or without its own opt-in. Development and tests only.
	AllowAllPrivate bool
	// PrivateCIDRs are the private ranges a peer that opts in may reach.
	PrivateCIDRs []netip.Prefix
	// NamespaceCIDRs are further private ranges a peer that opts in may
	// reach when it is in the namespace named by the key.
	NamespaceCIDRs map[string][]netip.Prefix
}

// Grant is what the policy lets one peer reach: the private destinations
// of its namespace and opt-in. The zero Grant reaches public addresses
// only.
type Grant struct {
	all      bool
	prefixes []netip.Prefix
	// key names the grant, so that connections are pooled per grant.
	key string
}

var (
	grantNone = Grant{key: "none"}
	grantAll  = Grant{all: true, key: "all"}
)

// Grant is what a peer in namespace, with or without its own opt-in, may
// reach. Compute it once per operation and put it on each request's
// context with WithGrant.
func (p Policy) Grant(namespace string, optIn bool) Grant {
	switch {
	case p.AllowAllPrivate:
		return grantAll
	case !optIn:
		return grantNone
	}
	prefixes := append(append([]netip.Prefix(nil), p.PrivateCIDRs...), p.NamespaceCIDRs[namespace]...)
	if len(prefixes) == 0 {
		return grantNone
	}
	parts := make([]string, len(prefixes))
	for i, pr := range prefixes {
		parts[i] = pr.Masked().String()
	}
	slices.Sort(parts)
	return Grant{prefixes: prefixes, key: "cidrs:" + strings.Join(slices.Compact(parts), ",")}
}

// Permits reports whether the policy lets a peer in namespace, with or
// without its own opt-in, dial ip.
func (p Policy) Permits(namespace string, optIn bool, ip netip.Addr) bool {
	return addrAllowed(ip, p.Grant(namespace, optIn))
}

func (g Grant) permits(ip netip.Addr) bool {
	if g.all {
		return true
	}
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// grantKey carries the per-request grant to the dialer through the request
// context.
type grantKey struct{}

// WithGrant records on ctx which private destinations a request made with
// it may reach through a Transport of this package. A context without a
// grant reaches public addresses only.
func WithGrant(ctx context.Context, g Grant) context.Context {
	return context.WithValue(ctx, grantKey{}, g)
}

// grantFrom reads the grant; absent means no private destination.
func grantFrom(ctx context.Context) Grant {
	g, _ := ctx.Value(grantKey{}).(Grant)
	return g
}

// ParseCIDRs reads a comma-separated list of CIDRs ("10.0.0.0/8,fd00::/8").
// Link-local and metadata addresses stay refused whatever the list holds.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("invalid CIDR %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// ParseNamespaceCIDRs reads "ns=cidr,cidr;ns2=cidr" into per-namespace lists.
func ParseNamespaceCIDRs(s string) (map[string][]netip.Prefix, error) {
	out := map[string][]netip.Prefix{}
	for _, entry := range strings.Split(s, ";") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		ns, cidrs, ok := strings.Cut(entry, "=")
		ns = strings.TrimSpace(ns)
		if !ok || ns == "" {
			return nil, fmt.Errorf("invalid entry %q: want namespace=cidr[,cidr...]", entry)
		}
		ps, err := ParseCIDRs(cidrs)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		out[ns] = append(out[ns], ps...)
	}
	return out, nil
}
