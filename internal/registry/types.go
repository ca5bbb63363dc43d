// Package registry speaks the MCP Registry's v0.1 API in both directions.
//
// In: a Client reads the official registry (or a compatible subregistry),
// and Manifest turns one of its remote servers into an McpServer draft that a
// person completes with a data class and an approval choice. A registry says
// who published an entry; it does not prove who controls the URL the entry
// names, so nothing it says decides how the server is governed.
//
// Out: Handler serves, as a read-only v0.1 registry, the servers one caller
// may call through the gateway, so that an IDE's registry allowlist follows
// the governed catalog.
package registry

import (
	"encoding/json"
	"time"
)

// APIVersion is the path segment of the registry API this package speaks.
const APIVersion = "v0.1"

// OfficialURL is the official MCP Registry.
const OfficialURL = "https://registry.modelcontextprotocol.io"

// MetaOfficial is the key of the registry-managed metadata in a
// ServerResponse's _meta.
const MetaOfficial = "io.modelcontextprotocol.registry/official"

// Transport types of a remote.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Statuses of a server version.
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// ServerList is the answer of GET /v0.1/servers and of GET
// /v0.1/servers/{serverName}/versions.
type ServerList struct {
	Servers  []ServerResponse `json:"servers"`
	Metadata *ListMetadata    `json:"metadata,omitempty"`
}

// ListMetadata carries the cursor of the next page.
type ListMetadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}

// ServerResponse is one version of one server, with the registry's own
// metadata beside what the publisher wrote.
type ServerResponse struct {
	Server ServerDetail  `json:"server"`
	Meta   *ResponseMeta `json:"_meta,omitempty"`
}

// ResponseMeta is the registry-managed metadata of a ServerResponse. Keys
// other than the official one are kept as they came.
type ResponseMeta struct {
	Official *OfficialMeta `json:"io.modelcontextprotocol.registry/official,omitempty"`
	// Gateway is what this project's registry handler adds (MetaGateway).
	Gateway *GatewayMeta `json:"dev.catalog.mcp/gateway,omitempty"`
}

// OfficialMeta is what the registry records about a version.
type OfficialMeta struct {
	Status          string     `json:"status,omitempty"`
	StatusMessage   string     `json:"statusMessage,omitempty"`
	StatusChangedAt *time.Time `json:"statusChangedAt,omitempty"`
	PublishedAt     *time.Time `json:"publishedAt,omitempty"`
	UpdatedAt       *time.Time `json:"updatedAt,omitempty"`
	IsLatest        bool       `json:"isLatest"`
}

// ServerDetail is the publisher's server.json: the fields this project
// reads or serves. Packages are kept only to be counted: a package is
// software to run locally, which the operator does not do.
type ServerDetail struct {
	Schema      string            `json:"$schema,omitempty"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Title       string            `json:"title,omitempty"`
	Version     string            `json:"version"`
	WebsiteURL  string            `json:"websiteUrl,omitempty"`
	Repository  *Repository       `json:"repository,omitempty"`
	Remotes     []Remote          `json:"remotes,omitempty"`
	Packages    []json.RawMessage `json:"packages,omitempty"`
}

// Repository names the source code of a server.
type Repository struct {
	URL       string `json:"url"`
	Source    string `json:"source"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Remote is one endpoint of a remote server.
type Remote struct {
	Type      string           `json:"type"`
	URL       string           `json:"url"`
	Headers   []Input          `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a header or a URL variable a client must supply.
type Input struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
}

// Status is the version's lifecycle status; an entry without one is
// active.
func (r *ServerResponse) Status() string {
	if r.Meta == nil || r.Meta.Official == nil || r.Meta.Official.Status == "" {
		return StatusActive
	}
	return r.Meta.Official.Status
}

// IsLatest says whether the registry marks this version as the latest.
func (r *ServerResponse) IsLatest() bool {
	return r.Meta != nil && r.Meta.Official != nil && r.Meta.Official.IsLatest
}

// StreamableRemotes returns the remotes the operator can use: Streamable
// HTTP ones (SSE is not a transport the operator speaks).
func (d *ServerDetail) StreamableRemotes() []Remote {
	var out []Remote
	for _, r := range d.Remotes {
		if r.Type == TransportStreamableHTTP {
			out = append(out, r)
		}
	}
	return out
}
