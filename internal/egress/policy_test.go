package egress

import (
	"net/netip"
	"testing"
)

// The tenant's opt-in uses only what the administrator allowed: ranges for
// everyone, ranges for one namespace, and nothing else. Loopback is not
// reachable unless listed; link-local and metadata never are.
func TestPolicyIsTheAdministratorsDecision(t *testing.T) {
	policy := Policy{
		PrivateCIDRs:   []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		NamespaceCIDRs: map[string][]netip.Prefix{"team-a": {netip.MustParsePrefix("192.168.0.0/16")}},
	}
	withLoopback := Policy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16")}}
	cases := []struct {
		name      string
		policy    Policy
		namespace string
		optIn     bool
		addr      string
		want      bool
	}{
		{"allowed range, opted in", policy, "team-b", true, "10.1.2.3", true},
		{"allowed range, not opted in", policy, "team-b", false, "10.1.2.3", false},
		{"allowed range through NAT64", policy, "team-b", true, "64:ff9b::a01:203", true},
		{"range of another namespace", policy, "team-b", true, "192.168.1.1", false},
		{"range of this namespace", policy, "team-a", true, "192.168.1.1", true},
		{"range of this namespace, not opted in", policy, "team-a", false, "192.168.1.1", false},
		{"loopback not listed", policy, "team-a", true, "127.0.0.1", false},
		{"IPv6 loopback not listed", policy, "team-a", true, "::1", false},
		{"loopback listed", withLoopback, "team-a", true, "127.0.0.1", true},
		{"metadata even when its range is listed", withLoopback, "team-a", true, "169.254.169.254", false},
		{"link-local even when its range is listed", withLoopback, "team-a", true, "169.254.1.1", false},
		{"no policy, opted in", Policy{}, "team-a", true, "10.1.2.3", false},
		{"development: everything private", Policy{AllowAllPrivate: true}, "team-a", false, "127.0.0.1", true},
		{"development: metadata still refused", Policy{AllowAllPrivate: true}, "team-a", true, "169.254.169.254", false},
		{"public, no opt-in", policy, "team-b", false, "93.184.216.34", true},
	}
	for _, c := range cases {
		if got := c.policy.Permits(c.namespace, c.optIn, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("%s: %s permitted %v, want %v", c.name, c.addr, got, c.want)
		}
	}
}

func TestParseEgressFlags(t *testing.T) {
	ps, err := ParseCIDRs(" 10.0.0.0/8, fd00::/8 ,")
	if err != nil || len(ps) != 2 || ps[1] != netip.MustParsePrefix("fd00::/8") {
		t.Fatalf("ParseCIDRs: %v %v", ps, err)
	}
	if _, err := ParseCIDRs("10.0.0.1"); err == nil {
		t.Error("an address without a length was accepted")
	}
	ns, err := ParseNamespaceCIDRs("team-a=10.1.0.0/16,10.2.0.0/16; team-b=192.168.0.0/24")
	if err != nil || len(ns["team-a"]) != 2 || len(ns["team-b"]) != 1 {
		t.Fatalf("ParseNamespaceCIDRs: %v %v", ns, err)
	}
	for _, bad := range []string{"team-a", "=10.0.0.0/8", "team-a=nonsense"} {
		if _, err := ParseNamespaceCIDRs(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
