package mcp

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/mcp-catalog/operator/internal/egress"
)

// Through a real client and a real server on loopback: a server's opt-in
// alone does not reach the operator's loopback; the administrator's range
// does.
func TestOptInAloneDoesNotReachLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ep := Endpoint{Name: "team-a/loop", Namespace: "team-a", URL: srv.URL, AllowPrivateNetwork: true}

	_, err := New(Options{}).Probe(t.Context(), ep)
	if KindOf(err) != KindBlockedAddress {
		t.Fatalf("opt-in without an administrator's range: %v, want %s", err, KindBlockedAddress)
	}
	admin := egress.Policy{NamespaceCIDRs: map[string][]netip.Prefix{"team-a": {netip.MustParsePrefix("127.0.0.0/8")}}}
	_, err = New(Options{Egress: admin}).Probe(t.Context(), ep)
	if KindOf(err) != KindServerError {
		t.Fatalf("opt-in within the administrator's range: %v, want the server's own 503", err)
	}
	other := ep
	other.Namespace = "team-b"
	_, err = New(Options{Egress: admin}).Probe(t.Context(), other)
	if KindOf(err) != KindBlockedAddress {
		t.Fatalf("another namespace reached a range allowed for team-a: %v", err)
	}
}
