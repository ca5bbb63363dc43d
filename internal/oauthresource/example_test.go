package oauthresource_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcp-catalog/operator/internal/oauthresource"
)

// How a server in front of MCP uses the package: the metadata served
// without a token, and each bearer token validated, refused (401, with
// the challenge) or not checkable now (503, with Retry-After). The
// gateway does the same in its identify stage, for the tokens that are
// not ServiceAccount tokens.
func Example() {
	o := oauthresource.DefaultOptions()
	o.Resource = "https://mcp.example.com/mcp"
	o.Issuers = []oauthresource.Issuer{{URL: "https://keycloak.example.com/realms/platform"}}
	o.Scopes = []string{"mcp.tools"}
	v, err := oauthresource.New(o)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	for _, p := range v.MetadataPaths() {
		mux.Handle(p, v.MetadataHandler())
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.Header().Set("WWW-Authenticate", v.Challenge())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id, err := v.Validate(r.Context(), token)
		var refused *oauthresource.TokenError
		var unavailable *oauthresource.UnavailableError
		switch {
		case errors.As(err, &refused):
			w.Header().Set("WWW-Authenticate", v.InvalidTokenChallenge(refused))
			w.WriteHeader(http.StatusUnauthorized)
			return
		case errors.As(err, &unavailable):
			w.Header().Set("Retry-After", unavailable.RetryAfterSeconds())
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		// id is a Kubernetes user.Info: the user of a SubjectAccessReview.
		_, _ = fmt.Fprintln(w, id.Username, id.Groups)
	})

	fmt.Println(v.MetadataPaths())
	fmt.Println(v.Challenge())
	// Output:
	// [/.well-known/oauth-protected-resource/mcp /.well-known/oauth-protected-resource]
	// Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp.tools"
}
