package controller

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// What a tenant learns from pointing an McpServer at an address it may not
// reach, as docs/threat-model.md decides ("What a server's conditions
// tell"): that the URL's host resolves to an address the operator refuses
// (BlockedAddress, which stalls until the spec or the administrator's
// ranges change), apart from a server that cannot be connected to
// (Unreachable, which waits). Not the address, not its class (private or
// metadata), not whether anything listens there: the conditions of two
// blocked hosts read the same, and so do those of a name that does not
// resolve and of a port where nothing listens.
func TestABlockedAddressTellsOnlyThatTheHostResolvedToOne(t *testing.T) {
	listening := httptest.NewServer(http.NotFoundHandler())
	defer listening.Close()
	_, port, _ := net.SplitHostPort(listening.Listener.Addr().String())
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	probe := func(url string, allowPrivate bool) error {
		_, err := mcp.New(mcp.Options{AllowPrivateNetworks: allowPrivate}).Probe(t.Context(), mcp.Endpoint{Name: "team/probe", URL: url})
		if err == nil {
			t.Fatalf("probing %s succeeded", url)
		}
		return err
	}
	type seen struct{ reason, message string }
	read := func(err error) seen {
		r, m := failureReason(err)
		return seen{r, m}
	}
	// A name of the cluster that resolves to a private address, with a
	// server listening behind it; and the metadata address.
	private := read(probe("http://localhost:"+port+"/mcp", false))
	metadata := read(probe("http://169.254.169.254/mcp", false))
	// A name that does not resolve, and a port where nothing listens.
	noName := read(probe("http://no-such-name.invalid/mcp", true))
	noListener := read(probe(closedURL+"/mcp", true))

	if private.reason != mcpv1alpha1.ReasonBlockedAddress || private != metadata {
		t.Errorf("blocked hosts read %+v and %+v, want one BlockedAddress condition", private, metadata)
	}
	if noName.reason != mcpv1alpha1.ReasonUnreachable || noName != noListener {
		t.Errorf("unreachable servers read %+v and %+v, want one Unreachable condition", noName, noListener)
	}
	for _, s := range []seen{private, metadata, noName, noListener} {
		for _, leak := range []string{"127.0.0.1", "::1", "169.254", "localhost", port, "no-such-name", "refused", "no such host"} {
			if strings.Contains(s.message, leak) {
				t.Errorf("the message %q tells %q", s.message, leak)
			}
		}
	}
	// The one thing the reasons tell apart is what the tenant does next.
	if classifyOperation(probe("http://localhost:"+port+"/mcp", false), private.reason, private.message) == nil {
		t.Error("a blocked address does not stall")
	}
	if classifyOperation(probe(closedURL+"/mcp", true), noListener.reason, noListener.message) != nil {
		t.Error("an unreachable server stalls")
	}
}
