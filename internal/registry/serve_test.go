package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

const gatewayURL = "https://mcp-catalog-operator-gateway.mcp-catalog-system.svc:8444/mcp"

// twoCallers is a catalog in which the caller named by the bearer token
// "alice" may call two servers of namespace agents, "bob" one shared server
// of namespace team-b, and anyone else nothing.
func twoCallers() Catalog {
	at := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	return CatalogFunc(func(r *http.Request) ([]CallableServer, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer alice":
			return []CallableServer{
				{Namespace: "agents", Group: "mcp_weather", Tools: []string{"mcp_weather_forecast", "mcp_weather_alerts"}, DataClass: "Internal", ApprovalRequired: true, Version: "1.0.2", UpdatedAt: at,
					Origin: &Origin{RegistryURL: OfficialURL, Name: "io.github.user/weather", Version: "1.0.2"}},
				{Namespace: "agents", Group: "mcp_docs", Tools: []string{"mcp_docs_search"}, DataClass: "Public", Version: VersionOf("", 3), UpdatedAt: at.Add(time.Hour)},
				// Nothing callable: not served.
				{Namespace: "agents", Group: "mcp_empty", Version: "0.0.1"},
			}, nil
		case "Bearer bob":
			return []CallableServer{{Namespace: "team-b", Group: "mcps_tickets", Tools: []string{"mcps_tickets_create"}, DataClass: "Confidential", ApprovalRequired: true, Version: "0.0.7"}}, nil
		case "Bearer limited":
			return nil, &Refusal{Status: http.StatusTooManyRequests, Message: "Too many requests", Header: http.Header{"Retry-After": {"3"}}}
		case "Bearer broken":
			return nil, errors.New("informer cache not synced: secret detail")
		case "":
			return nil, &Refusal{Status: http.StatusUnauthorized, Message: "Unauthorized", Header: http.Header{"Www-Authenticate": {`Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource"`}}}
		}
		return nil, nil
	})
}

func serveRegistry(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := NewHandler(twoCallers(), HandlerOptions{EndpointURL: gatewayURL})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, token, path string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func names(t *testing.T, body []byte) []string {
	t.Helper()
	var l ServerList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range l.Servers {
		out = append(out, s.Server.Name)
	}
	return out
}

// Every answer is one the registry's OpenAPI document allows, and each
// caller sees exactly its own servers.
func TestHandlerServesEachCallerItsCatalog(t *testing.T) {
	srv := serveRegistry(t)

	status, h, body := get(t, srv, "alice", "/v0.1/servers")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	validateAgainst(t, "ServerList", body)
	if got := strings.Join(names(t, body), ","); got != "dev.catalog.mcp.agents/mcp_docs,dev.catalog.mcp.agents/mcp_weather" {
		t.Errorf("alice sees %s", got)
	}
	if h.Get("Cache-Control") != "private, no-store" || h.Get("Vary") != "Authorization" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", h)
	}
	var l ServerList
	_ = json.Unmarshal(body, &l)
	w := l.Servers[1]
	if len(w.Server.Remotes) != 1 || w.Server.Remotes[0].URL != gatewayURL || w.Server.Remotes[0].Type != TransportStreamableHTTP {
		t.Errorf("remotes %+v: the gateway is the only endpoint served", w.Server.Remotes)
	}
	g := w.Meta.Gateway
	if g == nil || g.Group != "mcp_weather" || g.ToolCount != 2 || strings.Join(g.Tools, ",") != "mcp_weather_alerts,mcp_weather_forecast" || g.ImportedFrom == nil || g.ImportedFrom.Name != "io.github.user/weather" {
		t.Errorf("gateway meta %+v", g)
	}
	if w.Server.Version != "1.0.2" || !w.IsLatest() || w.Meta.Official.UpdatedAt == nil {
		t.Errorf("version %s latest %v", w.Server.Version, w.IsLatest())
	}
	if strings.Contains(string(body), "api.example.com") {
		t.Error("an upstream URL was served")
	}

	status, _, body = get(t, srv, "bob", "/v0.1/servers")
	validateAgainst(t, "ServerList", body)
	if got := strings.Join(names(t, body), ","); status != 200 || got != "dev.catalog.mcp.team-b/mcps_tickets" {
		t.Errorf("bob sees %s", got)
	}
	status, _, body = get(t, srv, "mallory", "/v0.1/servers")
	validateAgainst(t, "ServerList", body)
	if status != 200 || len(names(t, body)) != 0 {
		t.Errorf("a caller with nothing to call sees %s", body)
	}
}

func TestHandlerServesVersions(t *testing.T) {
	srv := serveRegistry(t)
	name := url.PathEscape("dev.catalog.mcp.agents/mcp_weather")

	status, _, body := get(t, srv, "alice", "/v0.1/servers/"+name+"/versions")
	validateAgainst(t, "ServerList", body)
	if status != 200 || strings.Join(names(t, body), ",") != "dev.catalog.mcp.agents/mcp_weather" {
		t.Errorf("versions: %d %s", status, body)
	}
	for _, v := range []string{"latest", "1.0.2"} {
		status, _, body = get(t, srv, "alice", "/v0.1/servers/"+name+"/versions/"+v)
		validateAgainst(t, "ServerResponse", body)
		if status != 200 {
			t.Errorf("version %s: %d %s", v, status, body)
		}
	}
	status, _, body = get(t, srv, "alice", "/v0.1/servers/"+name+"/versions/1.0.1")
	validateAgainst(t, "Error", body)
	if status != 404 {
		t.Errorf("an unknown version: %d", status)
	}
}

// A server the caller may not call is answered exactly as one that does
// not exist: the registry tells nobody about another's catalog.
func TestHandlerHidesOtherCallersServers(t *testing.T) {
	srv := serveRegistry(t)
	bobs := url.PathEscape("dev.catalog.mcp.team-b/mcps_tickets")
	none := url.PathEscape("dev.catalog.mcp.team-b/mcps_nothing")
	for _, p := range []string{"/versions", "/versions/latest", "/versions/0.0.7"} {
		s1, _, hidden := get(t, srv, "alice", "/v0.1/servers/"+bobs+p)
		s2, _, missing := get(t, srv, "alice", "/v0.1/servers/"+none+p)
		validateAgainst(t, "Error", hidden)
		if s1 != 404 || s1 != s2 || string(hidden) != string(missing) {
			t.Errorf("%s: another's server %d %s, a missing one %d %s", p, s1, hidden, s2, missing)
		}
	}
	// A server with nothing callable is not served either.
	s, _, _ := get(t, srv, "alice", "/v0.1/servers/"+url.PathEscape("dev.catalog.mcp.agents/mcp_empty")+"/versions")
	if s != 404 {
		t.Errorf("a server with no callable tool: %d", s)
	}
}

func TestHandlerPagesSearchesAndFilters(t *testing.T) {
	srv := serveRegistry(t)
	status, _, body := get(t, srv, "alice", "/v0.1/servers?limit=1")
	validateAgainst(t, "ServerList", body)
	var l ServerList
	_ = json.Unmarshal(body, &l)
	if status != 200 || len(l.Servers) != 1 || l.Metadata.NextCursor == "" || l.Metadata.Count != 1 {
		t.Fatalf("page 1: %s", body)
	}
	_, _, body = get(t, srv, "alice", "/v0.1/servers?limit=1&cursor="+url.QueryEscape(l.Metadata.NextCursor))
	validateAgainst(t, "ServerList", body)
	var l2 ServerList
	_ = json.Unmarshal(body, &l2)
	if len(l2.Servers) != 1 || l2.Servers[0].Server.Name == l.Servers[0].Server.Name || l2.Metadata.NextCursor != "" {
		t.Errorf("page 2: %s", body)
	}

	for q, want := range map[string]string{
		"search=WEATHER":                     "dev.catalog.mcp.agents/mcp_weather",
		"search=approval+required":           "dev.catalog.mcp.agents/mcp_weather",
		"version=latest":                     "dev.catalog.mcp.agents/mcp_docs,dev.catalog.mcp.agents/mcp_weather",
		"version=0.0.3":                      "dev.catalog.mcp.agents/mcp_docs",
		"updated_since=2026-12-01T11:00:00Z": "dev.catalog.mcp.agents/mcp_docs",
		"include_deleted=true&search=docs":   "dev.catalog.mcp.agents/mcp_docs",
		"search=nothing-matches-this":        "",
	} {
		status, _, body := get(t, srv, "alice", "/v0.1/servers?"+q)
		validateAgainst(t, "ServerList", body)
		if got := strings.Join(names(t, body), ","); status != 200 || got != want {
			t.Errorf("%s: %d %s, want %s", q, status, got, want)
		}
	}
	for _, q := range []string{"limit=0", "limit=x", "cursor=!!", "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("no name")), "cursor=" + strings.Repeat("A", 400), "updated_since=yesterday"} {
		if status, _, body := get(t, srv, "alice", "/v0.1/servers?"+q); status != 400 {
			t.Errorf("%s: %d %s", q, status, body)
		}
	}
}

func TestHandlerRefusals(t *testing.T) {
	srv := serveRegistry(t)
	status, h, body := get(t, srv, "", "/v0.1/servers")
	if status != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "resource_metadata") {
		t.Errorf("no token: %d %v", status, h)
	}
	validateAgainst(t, "Error", body)
	if status, h, _ := get(t, srv, "limited", "/v0.1/servers"); status != 429 || h.Get("Retry-After") != "3" {
		t.Errorf("over budget: %d %v", status, h)
	}
	if status, _, body := get(t, srv, "broken", "/v0.1/servers"); status != 503 || strings.Contains(string(body), "secret") {
		t.Errorf("a failing catalog: %d %s", status, body)
	}
	for _, p := range []string{"/v0/servers", "/v0.1/other", "/v0.1/servers/x", "/v0.1/servers/x/versions/1/status", "/v0.1/serversx"} {
		if status, _, _ := get(t, srv, "alice", p); status != 404 {
			t.Errorf("%s: %d", p, status)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v0.1/servers", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// This package's own client reads what its handler serves: the two ends
// agree on the API.
func TestClientReadsTheHandler(t *testing.T) {
	srv := serveRegistry(t)
	c := newTestClient(t, srv.URL, Options{PageSize: 1, Transport: bearer{"alice", srv.Client().Transport}})
	all, err := c.List(context.Background(), ListOptions{}, 0)
	if err != nil || len(all) != 2 {
		t.Fatalf("%v %d", err, len(all))
	}
	vs, err := c.Versions(context.Background(), "dev.catalog.mcp.agents/mcp_weather")
	if err != nil || len(vs) != 1 {
		t.Fatalf("%v %+v", err, vs)
	}
	if _, err := c.Version(context.Background(), "dev.catalog.mcp.team-b/mcps_tickets", "latest"); !IsReason(err, ReasonNotFound) {
		t.Errorf("bob's server for alice: %v", err)
	}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func TestNewHandlerChecksItsOptions(t *testing.T) {
	for _, o := range []HandlerOptions{{}, {EndpointURL: "gateway/mcp"}, {EndpointURL: "https://u:p@gw/mcp"}, {EndpointURL: gatewayURL, NamePrefix: "bad/prefix"}} {
		if _, err := NewHandler(twoCallers(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := NewHandler(nil, HandlerOptions{EndpointURL: gatewayURL}); err == nil {
		t.Error("no catalog accepted")
	}
}

// No path or query makes the handler panic or answer outside the API's
// statuses.
func FuzzHandlerRequest(f *testing.F) {
	for _, s := range []string{"/v0.1/servers?limit=1", "/v0.1/servers/dev.catalog.mcp.agents%2Fmcp_docs/versions/latest", "/v0.1/servers?cursor=ZGV2", "/v0.1/servers//versions", "/v0.1/servers/%ff/versions/%2F"} {
		f.Add(s, "alice")
	}
	h, err := NewHandler(twoCallers(), HandlerOptions{EndpointURL: gatewayURL})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target, token string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		r := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{"Authorization": {"Bearer " + token}}}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r.WithContext(context.Background()))
		switch w.Code {
		case 200, 400, 401, 404, 429, 503:
		default:
			t.Fatalf("%s: status %d", target, w.Code)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s: not JSON: %s", target, w.Body.Bytes())
		}
	})
}
