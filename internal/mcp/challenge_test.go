package mcp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-catalog/operator/internal/mcp"
)

// A 401 with a WWW-Authenticate challenge means the server is up and asks
// for a credential; one without is only a refusal. Callers tell the two
// apart through Error.Challenged, never through the status text.
func TestUnauthorizedRecordsWhetherTheServerChallenged(t *testing.T) {
	for _, c := range []struct {
		name      string
		challenge string
		want      bool
	}{
		{"with a challenge", `Bearer resource_metadata="https://as.example/.well-known/oauth-protected-resource"`, true},
		{"without a challenge", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if c.challenge != "" {
					w.Header().Set("WWW-Authenticate", c.challenge)
				}
				w.WriteHeader(http.StatusUnauthorized)
			}))
			defer srv.Close()
			_, err := mcp.New(mcp.Options{Egress: loopbackEgress}).Probe(t.Context(), mcp.Endpoint{Name: "t", URL: srv.URL, AllowPrivateNetwork: true})
			var me *mcp.Error
			if !errors.As(err, &me) || me.Kind != mcp.KindUnauthorized {
				t.Fatalf("err = %v, want %s", err, mcp.KindUnauthorized)
			}
			if me.Challenged != c.want {
				t.Errorf("Challenged = %v, want %v", me.Challenged, c.want)
			}
		})
	}
}
