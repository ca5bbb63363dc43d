package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-catalog/operator/internal/registry"
	"github.com/mcp-catalog/operator/test/registryapi"
)

// getRegistry GETs path of the gateway's registry with token ("" sends
// none) and returns the status and body.
func getRegistry(t *testing.T, base, path, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// The registry the gateway serves lists, for its caller, the servers of
// exactly the tools a tools/list offers that caller, each naming the
// gateway's endpoint and no upstream, valid by the registry's OpenAPI
// document; a caller without a token is refused, and a caller of no
// tools is served an empty list.
func TestTheRegistryServesTheCallersCatalog(t *testing.T) {
	const public = "https://mcp.example.com/mcp"
	_, hs := catalogGatewayWith(t, "http://upstream.invalid/mcp", nil, allowList{echoObject: true}, 2,
		func(o *Options) {
			o.PublicURL = public
			o.Authn = tokenTable{
				obsToken: {Username: "system:serviceaccount:team:agent", UID: "u1", Namespace: obsNS, ServiceAccount: "agent"},
				"other":  {Username: "system:serviceaccount:elsewhere:other", UID: "u2", Namespace: "elsewhere", ServiceAccount: "other"},
			}
		})

	status, body := getRegistry(t, hs.URL, "/v0.1/servers", obsToken)
	if status != http.StatusOK {
		t.Fatalf("GET /v0.1/servers: %d %s", status, body)
	}
	registryapi.Validate(t, registryapi.ServerList, body)
	var list registry.ServerList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Servers) != 1 {
		t.Fatalf("%d servers served, want the one whose tool the agent may call: %s", len(list.Servers), body)
	}
	s := list.Servers[0].Server
	if len(s.Remotes) != 1 || s.Remotes[0].URL != public {
		t.Errorf("remotes %+v, want only the gateway's endpoint", s.Remotes)
	}
	if list.Servers[0].Meta == nil || list.Servers[0].Meta.Gateway == nil {
		t.Fatalf("no gateway _meta: %s", body)
	}
	gm := *list.Servers[0].Meta.Gateway
	// RBAC lets the agent call echo only, not secret nor the extra tools.
	if !slices.Equal(gm.Tools, []string{echoLocal}) || gm.DataClass != "Public" || gm.ApprovalRequired {
		t.Errorf("gateway meta %+v, want the one tool %s, Public, no approval", gm, echoLocal)
	}
	if strings.Contains(string(body), "upstream.invalid") {
		t.Error("the upstream's URL was served")
	}

	if status, body := getRegistry(t, hs.URL, "/v0.1/servers", ""); status != http.StatusUnauthorized {
		t.Errorf("without a token: %d %s, want 401", status, body)
	}
	status, body = getRegistry(t, hs.URL, "/v0.1/servers", "other")
	if status != http.StatusOK {
		t.Fatalf("another caller: %d %s", status, body)
	}
	registryapi.Validate(t, registryapi.ServerList, body)
	if err := json.Unmarshal(body, &list); err != nil || len(list.Servers) != 0 {
		t.Errorf("a caller of no tools was served %s", body)
	}
}
