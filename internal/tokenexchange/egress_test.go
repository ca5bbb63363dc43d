package tokenexchange_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/secret"
	te "github.com/mcp-catalog/operator/internal/tokenexchange"
)

// The token endpoint is dialled through the address guard: on loopback it is
// refused unless the administrator's policy allows it, for the profile's
// namespace or for all.
func TestTokenEndpointGoesThroughTheAddressGuard(t *testing.T) {
	as := newTestAS(t)
	pool := x509.NewCertPool()
	pool.AddCert(as.srv.Certificate())
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cases := []struct {
		name      string
		policy    egress.Policy
		namespace string
		allowed   bool
	}{
		{"no policy", egress.Policy{}, "team-a", false},
		{"another range", egress.Policy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, "team-a", false},
		{"another namespace's range", egress.Policy{NamespaceCIDRs: map[string][]netip.Prefix{"team-b": loop}}, "team-a", false},
		{"this namespace's range", egress.Policy{NamespaceCIDRs: map[string][]netip.Prefix{"team-a": loop}}, "team-a", true},
		{"a range for all", egress.Policy{PrivateCIDRs: loop}, "team-a", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := te.New(te.Options{RootCAs: pool, Egress: c.policy})
			if err != nil {
				t.Fatal(err)
			}
			before := as.requests.Load()
			req := baseRequest(as)
			req.Namespace = c.namespace
			_, err = cl.Exchange(context.Background(), req, profileAllowed, actorAllowed)
			if c.allowed {
				if err != nil {
					t.Fatalf("allowed endpoint: %v", err)
				}
				return
			}
			e := wantKind(t, err, te.KindBlockedAddress)
			var blocked *egress.BlockedAddressError
			if !errors.As(e.Err, &blocked) {
				t.Errorf("cause %v is not the guard's", e.Err)
			}
			if n := as.requests.Load() - before; n != 0 {
				t.Fatalf("refused endpoint handled %d requests", n)
			}
		})
	}
}

// HTTP_PROXY and HTTPS_PROXY are not used: the proxy in the environment
// sees no connection. net/http reads the environment once per process, so
// the exchange runs in a child process started with the variables set.
func TestEnvironmentProxyIsIgnored(t *testing.T) {
	if os.Getenv("TE_PROXY_CHILD") != "" {
		// A private address outside loopback: net/http would send it to
		// the proxy (it skips the proxy only for loopback and localhost).
		allow := egress.Policy{PrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
		cl, err := te.New(te.Options{Egress: allow, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		req := te.Request{
			TokenEndpoint:    "https://10.255.255.1/token",
			ClientID:         asClientID,
			ClientSecret:     secret.New(asClientSecret),
			SubjectToken:     secret.New(asSubjectToken),
			SubjectTokenType: te.TokenTypeAccessToken,
			Audience:         asAudience,
		}
		_, _ = cl.Exchange(context.Background(), req, profileAllowed, actorAllowed)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	proxy := "http://" + ln.Addr().String()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvironmentProxyIsIgnored$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TE_PROXY_CHILD=1", "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "https_proxy="+proxy, "NO_PROXY=", "no_proxy=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the proxy from the environment received %d connections", n)
	}
}
