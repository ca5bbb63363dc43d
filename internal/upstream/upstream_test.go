package upstream

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/mcp"
	"github.com/mcp-catalog/operator/internal/secret"
)

// Every spec field that shapes what goes on the wire reaches the endpoint,
// for imports, probes and calls alike.
func TestEndpoint(t *testing.T) {
	srv := &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "records"},
		Spec: mcpv1alpha1.McpServerSpec{
			URL:                     "http://records.team.svc/mcp",
			AllowCredentialOverHTTP: true,
			AllowPrivateNetwork:     true,
			OperationTimeout:        &metav1.Duration{Duration: 7 * time.Second},
			Import:                  mcpv1alpha1.ImportSettings{MaxPages: 3, MaxTools: 40, MaxCatalogBytes: 1 << 20},
		},
	}
	cred := &mcp.Credential{Header: "X-Api-Key", Value: secret.New("k")}
	got := Endpoint(srv, cred)
	want := mcp.Endpoint{
		Name: "team/records", URL: "http://records.team.svc/mcp", Credential: cred,
		AllowInsecureCredential: true, AllowPrivateNetwork: true, Namespace: "team",
		Timeout: 7 * time.Second, MaxPages: 3, MaxTools: 40, MaxCatalogBytes: 1 << 20,
	}
	if got != want {
		t.Errorf("Endpoint = %+v, want %+v", got, want)
	}

	srv.Spec.OperationTimeout = nil
	if got := Endpoint(srv, nil); got.Timeout != 0 || got.Credential != nil {
		t.Errorf("without timeout or credential: %+v, want the client's default budget and no credential", got)
	}
}
