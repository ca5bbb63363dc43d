package gateway

import (
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-catalog/operator/internal/gateway/authn"
)

// Only a person's own access token, from the request being served, is
// ever handed to a delegation: a ServiceAccount's gateway token never is.
func TestCallerTokenIsAPersonsOnly(t *testing.T) {
	person := &authn.Identity{Username: "alice@example.com", Issuer: "https://idp.example.com", Namespace: "team-a"}
	sa := &authn.Identity{Username: "system:serviceaccount:team-a:bot", ServiceAccount: "bot", Namespace: "team-a"}
	req := func(auth string) *sdk.CallToolRequest {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		return &sdk.CallToolRequest{Extra: &sdk.RequestExtra{Header: h}}
	}
	for name, c := range map[string]struct {
		req  *sdk.CallToolRequest
		id   *authn.Identity
		want string
	}{
		"a person's bearer token":         {req("Bearer tok-1"), person, "tok-1"},
		"the scheme in any case":          {req("bearer tok-2"), person, "tok-2"},
		"a ServiceAccount's token":        {req("Bearer sa-token"), sa, ""},
		"no header":                       {req(""), person, ""},
		"another scheme":                  {req("Basic dXNlcjpwYXNz"), person, ""},
		"no request header at all":        {&sdk.CallToolRequest{}, person, ""},
		"a person without a known issuer": {req("Bearer tok-3"), &authn.Identity{Username: "bob", Namespace: "team-a"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := callerToken(c.req, c.id).Reveal(); got != c.want {
				t.Fatalf("callerToken = %q, want %q", got, c.want)
			}
		})
	}
}
