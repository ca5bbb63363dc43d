package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MetaGateway is the key of what Handler adds to an entry's _meta: the
// governed facts of the server as the gateway applies them.
const MetaGateway = "dev.catalog.mcp/gateway"

// Handler defaults.
const (
	// DefaultNamePrefix starts every served entry's name: the API group
	// mcp.catalog.dev written as a reverse-DNS namespace.
	DefaultNamePrefix = "dev.catalog.mcp"
	// DefaultServePageSize is the page size when a request names none.
	DefaultServePageSize = 30
	// MaxServePageSize is the largest page served.
	MaxServePageSize = 100
	// maxListedTools bounds the tool names one entry lists in its _meta;
	// toolCount still counts them all.
	maxListedTools = 100
	// maxDescription is the API's bound on a description and a title.
	maxDescription = 100
)

// CallableServer is one server a caller may call through the gateway: an
// McpServer of the caller's namespace, or a server another namespace shares
// with it, with at least one tool the caller may call now.
type CallableServer struct {
	// Namespace is the namespace the caller reaches the server in (its
	// own, for a shared server the consumer's).
	Namespace string
	// Group is the prefix of the tool names agents see: mcp_<server> for an
	// own server, mcps_<McpSharedServer> for a shared one.
	Group string
	// Tools are the tool names (as tools/list offers them to this caller)
	// the caller may call.
	Tools []string
	// DataClass and ApprovalRequired are the server's, as the gateway
	// applies them.
	DataClass        string
	ApprovalRequired bool
	// Version is the entry's version; VersionOf gives the rule.
	Version string
	// UpdatedAt is when what is offered last changed; zero leaves the
	// timestamps out.
	UpdatedAt time.Time
	// Origin is where the McpServer was imported from, if it was.
	Origin *Origin
}

// Origin is the registry entry an McpServer was imported from, as its
// annotations record it.
type Origin struct {
	RegistryURL string `json:"registryUrl,omitempty"`
	Name        string `json:"name,omitempty"`
	Version     string `json:"version,omitempty"`
}

// GatewayMeta is what an entry served by Handler says about the server as
// governed here.
type GatewayMeta struct {
	Namespace        string   `json:"namespace"`
	Group            string   `json:"group"`
	ToolCount        int      `json:"toolCount"`
	Tools            []string `json:"tools"`
	DataClass        string   `json:"dataClass,omitempty"`
	ApprovalRequired bool     `json:"approvalRequired"`
	ImportedFrom     *Origin  `json:"importedFrom,omitempty"`
}

// VersionOf is the version an entry is served at: the registry version the
// McpServer was imported at, or else 0.0.<generation>, which grows with
// every change of the McpServer's spec.
func VersionOf(recorded string, generation int64) string {
	if recorded != "" && checkPathValue(recorded, maxVersionBytes) == nil {
		return recorded
	}
	if generation < 0 {
		generation = 0
	}
	return "0.0." + strconv.FormatInt(generation, 10)
}

// Catalog gives the servers the caller of a request may call. The gateway
// implements it: it identifies the caller of r as it does for tools/list
// and returns exactly the servers whose tools that list would offer.
type Catalog interface {
	CallableServers(r *http.Request) ([]CallableServer, error)
}

// CatalogFunc adapts a function to Catalog.
type CatalogFunc func(r *http.Request) ([]CallableServer, error)

// CallableServers calls f.
func (f CatalogFunc) CallableServers(r *http.Request) ([]CallableServer, error) { return f(r) }

// Refusal is an error a Catalog returns to answer with a status of its own
// (401 with its WWW-Authenticate header, 429 with Retry-After, ...). Its
// Message is sent as the error text.
type Refusal struct {
	Status  int
	Message string
	Header  http.Header
}

func (r *Refusal) Error() string { return fmt.Sprintf("%d %s", r.Status, r.Message) }

// HandlerOptions configure a Handler.
type HandlerOptions struct {
	// EndpointURL is the gateway's MCP endpoint, the one remote every
	// served entry names: no upstream URL ever leaves the gateway.
	EndpointURL string
	// NamePrefix is the reverse-DNS namespace part of served names, before
	// the caller's namespace; empty means DefaultNamePrefix.
	NamePrefix string
	// AuthHeaderDescription describes the Authorization header the
	// endpoint requires, for the IDE's user.
	AuthHeaderDescription string
}

type handler struct {
	cat    Catalog
	opts   HandlerOptions
	remote Remote
}

// NewHandler serves the v0.1 read API (GET /v0.1/servers,
// /v0.1/servers/{serverName}/versions and
// /v0.1/servers/{serverName}/versions/{version}) from cat, per request: each
// caller sees exactly the servers it may call, and a server it may not call
// is answered as one that does not exist. Mount it where the path starts
// with /v0.1/ (http.StripPrefix for a prefix of your own).
func NewHandler(cat Catalog, o HandlerOptions) (http.Handler, error) {
	if cat == nil {
		return nil, errors.New("registry handler: no catalog")
	}
	u, err := url.Parse(o.EndpointURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, errors.New("registry handler: the endpoint URL must be an absolute http(s) URL without user information")
	}
	if o.NamePrefix == "" {
		o.NamePrefix = DefaultNamePrefix
	}
	if !namePattern.MatchString(o.NamePrefix + ".x/x") {
		return nil, errors.New("registry handler: the name prefix must be letters, digits, '.' and '-'")
	}
	if o.AuthHeaderDescription == "" {
		o.AuthHeaderDescription = "Bearer token the gateway accepts (a ServiceAccount token for the gateway's audience, or an OAuth access token)"
	}
	h := &handler{cat: cat, opts: o, remote: Remote{
		Type: TransportStreamableHTTP,
		URL:  o.EndpointURL,
		Headers: []Input{{
			Name: "Authorization", Description: o.AuthHeaderDescription, IsRequired: true, IsSecret: true,
		}},
	}}
	return h, nil
}

// EntryName is the name a callable server is served under:
// <prefix>.<namespace>/<group>, for example
// dev.catalog.mcp.agents/mcp_docs.
func EntryName(prefix, namespace, group string) string {
	return prefix + "." + namespace + "/" + group
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs, ok := splitPath(r.URL.EscapedPath())
	if !ok {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "This registry is read-only")
		return
	}
	servers, err := h.cat.CallableServers(r)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			for k, v := range ref.Header {
				w.Header()[k] = v
			}
			writeError(w, ref.Status, ref.Message)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "The catalog is not available")
		return
	}
	entries := h.entries(servers)
	switch len(segs) {
	case 0:
		h.list(w, r, entries)
	case 2:
		e := find(entries, segs[0])
		if e == nil {
			writeError(w, http.StatusNotFound, "Server not found")
			return
		}
		writeJSON(w, http.StatusOK, ServerList{Servers: []ServerResponse{*e}, Metadata: &ListMetadata{Count: 1}})
	case 3:
		e := find(entries, segs[0])
		if e == nil {
			writeError(w, http.StatusNotFound, "Server not found")
			return
		}
		if segs[2] != "latest" && segs[2] != e.Server.Version {
			writeError(w, http.StatusNotFound, "Server version not found")
			return
		}
		writeJSON(w, http.StatusOK, e)
	}
}

// splitPath reads /v0.1/servers[/{name}/versions[/{version}]] from an
// escaped path; each segment is unescaped on its own, so a name's %2F stays
// in its segment.
func splitPath(escaped string) ([]string, bool) {
	rest, ok := strings.CutPrefix(escaped, "/"+APIVersion+"/servers")
	if !ok {
		return nil, false
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		return nil, true
	}
	if rest[0] != '/' {
		return nil, false
	}
	raw := strings.Split(rest[1:], "/")
	if len(raw) < 2 || len(raw) > 3 || raw[1] != "versions" {
		return nil, false
	}
	segs := make([]string, len(raw))
	for i, s := range raw {
		v, err := url.PathUnescape(s)
		if err != nil || v == "" {
			return nil, false
		}
		segs[i] = v
	}
	return segs, true
}

func (h *handler) list(w http.ResponseWriter, r *http.Request, entries []ServerResponse) {
	q := r.URL.Query()
	limit := DefaultServePageSize
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = min(n, MaxServePageSize)
	}
	after := ""
	if s := q.Get("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || !ValidName(string(b)) {
			writeError(w, http.StatusBadRequest, "cursor is not one this registry issued")
			return
		}
		after = string(b)
	}
	var since time.Time
	if s := q.Get("updated_since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "updated_since must be an RFC 3339 date-time")
			return
		}
		since = t
	}
	search := strings.ToLower(q.Get("search"))
	version := q.Get("version")
	page := []ServerResponse{}
	next := ""
	for i := range entries {
		e := &entries[i]
		switch {
		case e.Server.Name <= after:
			continue
		case search != "" && !strings.Contains(strings.ToLower(e.Server.Name), search) && !strings.Contains(strings.ToLower(e.Server.Description), search):
			continue
		case version != "" && version != "latest" && version != e.Server.Version:
			continue
		case !since.IsZero() && e.Meta.Official.UpdatedAt != nil && !e.Meta.Official.UpdatedAt.After(since):
			continue
		}
		if len(page) == limit {
			next = base64.RawURLEncoding.EncodeToString([]byte(page[len(page)-1].Server.Name))
			break
		}
		page = append(page, *e)
	}
	writeJSON(w, http.StatusOK, ServerList{Servers: page, Metadata: &ListMetadata{NextCursor: next, Count: len(page)}})
}

// entries turns callable servers into registry entries sorted by name,
// leaving out any whose name the API would not accept.
func (h *handler) entries(servers []CallableServer) []ServerResponse {
	out := make([]ServerResponse, 0, len(servers))
	seen := map[string]bool{}
	for _, s := range servers {
		name := EntryName(h.opts.NamePrefix, s.Namespace, s.Group)
		if !ValidName(name) || seen[name] || len(s.Tools) == 0 {
			continue
		}
		seen[name] = true
		version := s.Version
		if checkPathValue(version, maxVersionBytes) != nil {
			version = VersionOf("", 0)
		}
		tools := append([]string(nil), s.Tools...)
		sort.Strings(tools)
		listed := tools
		if len(listed) > maxListedTools {
			listed = listed[:maxListedTools]
		}
		official := &OfficialMeta{Status: StatusActive, IsLatest: true}
		if !s.UpdatedAt.IsZero() {
			t := s.UpdatedAt.UTC()
			official.PublishedAt, official.UpdatedAt = &t, &t
		}
		out = append(out, ServerResponse{
			Server: ServerDetail{
				Name:        name,
				Title:       clip(s.Namespace + "/" + s.Group),
				Description: clip(describe(s, len(tools))),
				Version:     version,
				Remotes:     []Remote{h.remote},
			},
			Meta: &ResponseMeta{
				Official: official,
				Gateway: &GatewayMeta{
					Namespace: s.Namespace, Group: s.Group, ToolCount: len(tools), Tools: listed,
					DataClass: s.DataClass, ApprovalRequired: s.ApprovalRequired, ImportedFrom: s.Origin,
				},
			},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server.Name < out[j].Server.Name })
	return out
}

// describe is the platform's own description of an entry: nothing the
// remote server says about itself.
func describe(s CallableServer, tools int) string {
	approval := "no approval"
	if s.ApprovalRequired {
		approval = "approval required"
	}
	noun := "tools"
	if tools == 1 {
		noun = "tool"
	}
	return fmt.Sprintf("%d %s via the MCP catalog gateway; data class %s, %s", tools, noun, s.DataClass, approval)
}

func clip(s string) string {
	r := []rune(s)
	if len(r) <= maxDescription {
		return s
	}
	return string(r[:maxDescription-3]) + "..."
}

func find(entries []ServerResponse, name string) *ServerResponse {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Server.Name >= name })
	if i < len(entries) && entries[i].Server.Name == name {
		return &entries[i]
	}
	return nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// The answer depends on who asks: no shared cache may keep it.
	h.Set("Cache-Control", "private, no-store")
	h.Set("Vary", "Authorization")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
