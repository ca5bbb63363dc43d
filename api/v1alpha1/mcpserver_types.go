package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// McpServerSpec declares one remote MCP server: where it is, how sensitive
// its tools' output is, whether calls need a human's approval, and how to
// authenticate. Nothing the server says about itself changes these.
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.urlFrom)",message="spec needs exactly one of url or urlFrom"
// +kubebuilder:validation:XValidation:rule="!has(self.url) || !(has(self.auth) && (has(self.auth.bearer) || has(self.auth.header) || has(self.auth.delegated))) || !self.url.lowerAscii().startsWith('http://') || (has(self.allowCredentialOverHTTP) && self.allowCredentialOverHTTP)",message="spec.url uses plain http while spec.auth sends a credential: use https, or set spec.allowCredentialOverHTTP: true to accept sending it in clear text"
type McpServerSpec struct {
	// url is the MCP endpoint (Streamable HTTP). https is always allowed;
	// http is allowed, but no credential is sent over it unless
	// allowCredentialOverHTTP is true. User information, fragments and query
	// parameters that carry a credential (token, api_key, password, sig,
	// X-Amz-Signature and the like, by name, case-insensitive) are not
	// allowed: a URL that embeds a credential goes in a Secret, see urlFrom.
	// A refused URL is not repeated in the refusal (reason Forbidden).
	// Exactly one of url and urlFrom is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.lowerAscii().startsWith('https://') || self.lowerAscii().startsWith('http://')",message="spec.url must use the https or http scheme",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getHostname() != ''",message="spec.url must be an absolute URL with a host",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@')",message="spec.url must not contain user information (user:password@); reference a Secret in spec.auth instead",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.contains('#')",message="spec.url must not contain a fragment (#...)",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.lowerAscii().matches('^[^?]*[?]([^#]*&)?(([^=&#]*[-_.])?(key|sig|auth|pass|pwd|jwt)|[^=&#]*(token|secret|passw|signature|apikey|accesskey|credential|authori[sz]ation|session)[^=&#]*)(=|&|$)')",message="spec.url must not carry a credential in its query (a parameter named like token, key, password, secret, sig or signature); put the whole URL in a Secret and reference it with spec.urlFrom",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^?]*[?](.*;|(.*&)?[^=&]*%)')",message="spec.url must not use ';' or percent-encoded parameter names in its query; separate parameters with '&' and write their names plainly",reason=FieldValueForbidden
	URL string `json:"url,omitempty"`

	// urlFrom reads the endpoint URL from a Secret key, for providers that
	// issue URLs which are themselves credentials (a token in the query or
	// path). The Secret must carry the label mcp.catalog.dev/credential:
	// "true", the URL is read at every operation like any credential, and it
	// is never shown: status, events, logs and errors show at most its
	// scheme, host and port. A URL read this way must use https unless
	// allowCredentialOverHTTP is true.
	// +optional
	URLFrom *URLSource `json:"urlFrom,omitempty"`

	// dataClass is the operator-declared classification of what this
	// server's tools return, ordered Public < Internal < Confidential <
	// Restricted. It has no default: a server without one offers no tools.
	// +required
	DataClass DataClass `json:"dataClass"`

	// approvalRequired says whether every call to this server's tools needs
	// a human's approval. Only an explicit false turns it off.
	// +optional
	// +default=true
	ApprovalRequired *bool `json:"approvalRequired,omitempty"`

	// approvalByEffect keys approval on what a person reviewed the tools to
	// do (McpTool spec.reviewedEffects), never on the server's hints:
	// reviewed read-only tools can be exempted from approvalRequired, and
	// tools with given effects can require approval where approvalRequired
	// is false. A tool nobody reviewed has every effect but read-only.
	// +optional
	ApprovalByEffect *EffectApproval `json:"approvalByEffect,omitempty"`

	// suspend stops imports and health probes without deleting anything.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// auth selects how the operator authenticates to the server: omitted or
	// empty for none, or exactly one of bearer, header or delegated.
	// +optional
	Auth *McpServerAuth `json:"auth,omitempty"`

	// allowCredentialOverHTTP permits sending the credential of spec.auth
	// over a plain http URL. Leave it unset unless the network path is
	// protected by other means.
	// +optional
	AllowCredentialOverHTTP bool `json:"allowCredentialOverHTTP,omitempty"`

	// allowPrivateNetwork asks to connect to private addresses (loopback,
	// RFC 1918, unique-local, ...), checked after DNS resolution. It only
	// reaches the private ranges the cluster administrator allows for this
	// namespace (manager flags --allowed-private-cidrs and
	// --namespace-private-cidrs); link-local and cloud metadata addresses
	// are refused even when this is true.
	// +optional
	AllowPrivateNetwork bool `json:"allowPrivateNetwork,omitempty"`

	// tls tunes the verification of an https server's certificate, for
	// servers whose certificate a private CA issued.
	// +optional
	TLS *TLSSettings `json:"tls,omitempty"`

	// operationTimeout is the budget of one whole MCP operation (handshake
	// and every page or call after it). More than 0 and at most 5m.
	// +optional
	// +default="20s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('5m')",message="spec.operationTimeout must be more than 0s and at most 5m"
	OperationTimeout *metav1.Duration `json:"operationTimeout,omitempty"`

	// import tunes catalog imports.
	// +optional
	// +default={}
	Import ImportSettings `json:"import,omitempty"`

	// healthCheck tunes the health probe.
	// +optional
	// +default={}
	HealthCheck HealthCheckSettings `json:"healthCheck,omitempty"`

	// sharing offers the server's enabled and approved tools to agents of
	// other namespaces, each of which must also accept the offer with an
	// McpSharedServer. Unset (or empty) shares with no namespace. The
	// server's credentials, URL and Secrets never leave this namespace:
	// calls are sent from here, with this server's auth.
	// +optional
	Sharing *ServerSharing `json:"sharing,omitempty"`
}

// ServerSharing names the namespaces a server is shared with: those listed
// in namespaces and those namespaceSelector selects.
type ServerSharing struct {
	// namespaces are names of namespaces the server is shared with.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`

	// namespaceSelector shares the server with every namespace whose
	// labels it matches. An empty selector ({}) matches every namespace.
	// +optional
	NamespaceSelector *NamespaceSelector `json:"namespaceSelector,omitempty"`

	// approvalModes are the approval modes this server accepts from a
	// consuming namespace for the calls whose approval this server or its
	// tool requires: Person (a person decides an McpCallApproval; always
	// accepted, so always listed) and ClientElicitation (the agent's own
	// client answers; accepted only when listed). A consumer whose
	// McpAccessPolicy chooses a mode not listed gets Person. An approval
	// only the consumer requires (its McpSharedServer's approvalRequired)
	// is approved the consumer's way.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="self.exists(m, m == 'Person')",message="Person is always accepted: list it"
	// +default=["Person"]
	ApprovalModes []ApprovalMode `json:"approvalModes,omitempty"`

	// approvers are whose people decide, in the Person mode, a consuming
	// namespace's call that this server or its tool requires approval
	// for. Owner: an McpCallApproval in this namespace, decided by its
	// approvers (the call-approver role bound here); the consumer's
	// approvers cannot decide it. Consumer: an McpCallApproval in the
	// calling agent's namespace, decided by that namespace's approvers.
	// +optional
	// +default="Owner"
	Approvers SharedApprovers `json:"approvers,omitempty"`
}

// SharedApprovers are whose people decide the calls a server's consumers
// make of tools that need approval.
// +kubebuilder:validation:Enum=Owner;Consumer
type SharedApprovers string

const (
	// SharedApproversOwner: the people of the server's own namespace.
	SharedApproversOwner SharedApprovers = "Owner"
	// SharedApproversConsumer: the people of the calling agent's
	// namespace.
	SharedApproversConsumer SharedApprovers = "Consumer"
)

// NamespaceSelector selects namespaces by their labels: every requirement
// must hold. It is a Kubernetes label selector written with
// matchExpressions only ({key: team, operator: In, values: [a]} says what
// matchLabels {team: a} would), so that the API server checks every key and
// value.
type NamespaceSelector struct {
	// matchExpressions are requirements on labels. None selects every
	// namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []NamespaceSelectorRequirement `json:"matchExpressions,omitempty"`
}

// NamespaceSelectorRequirement is one requirement on a label: In and NotIn
// need values, Exists and DoesNotExist take none.
// +kubebuilder:validation:XValidation:rule="(self.operator == 'In' || self.operator == 'NotIn') == (has(self.values) && size(self.values) > 0)",message="values are required for In and NotIn, and not allowed for Exists and DoesNotExist"
type NamespaceSelectorRequirement struct {
	// key is the label key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`

	// operator is In, NotIn, Exists or DoesNotExist.
	// +required
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// values are the label values of In and NotIn.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	Values []string `json:"values,omitempty"`
}

// URLSource says where an endpoint URL that must stay secret is read from.
type URLSource struct {
	// secretRef names the Secret key that holds the URL.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// McpServerAuth holds at most one authentication mode. Every credential is a
// reference to a Secret in the McpServer's namespace; no field here can hold
// a token.
// +kubebuilder:validation:XValidation:rule="[has(self.bearer), has(self.header), has(self.delegated), has(self.perPerson)].filter(x, x).size() <= 1",message="spec.auth allows at most one of bearer, header, delegated or perPerson"
type McpServerAuth struct {
	// bearer sends the Secret's value as "Authorization: Bearer <value>".
	// +optional
	Bearer *BearerAuth `json:"bearer,omitempty"`

	// header sends the Secret's value in a named header.
	// +optional
	Header *HeaderAuth `json:"header,omitempty"`

	// delegated exchanges the calling actor's token for one scoped to this
	// server (RFC 8693) through a McpDelegationProfile.
	// +optional
	Delegated *DelegatedAuth `json:"delegated,omitempty"`

	// perPerson calls each tool with the calling person's own token at the
	// server, which each person obtains once by authorizing the server at
	// its authorization server (OAuth authorization code with PKCE). The
	// gateway stores the tokens, refreshes them and uses each for its
	// person only (docs/adr/056-per-person-upstream-authorization.md).
	// +optional
	PerPerson *PerPersonAuth `json:"perPerson,omitempty"`
}

// PerPersonAuth is per-person upstream authorization: the gateway is an
// OAuth client of the server's authorization server, each person consents
// once, and their calls present their own token.
// +kubebuilder:validation:XValidation:rule="!has(self.clientSecretRef) || has(self.clientID)",message="spec.auth.perPerson.clientSecretRef is the secret of a pre-registered client: name its clientID too"
type PerPersonAuth struct {
	// clientID is the gateway's client at the authorization server,
	// registered beforehand with the gateway's callback URL as its
	// redirect URI. Unset: the gateway registers a client of its own at
	// the authorization server's registration endpoint (RFC 7591) and
	// keeps it in a Secret of this namespace.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ClientID string `json:"clientID,omitempty"`

	// clientSecretRef names the Secret key that holds the pre-registered
	// client's secret, sent with HTTP Basic at the token endpoint. Unset
	// with clientID: a public client, protected by PKCE alone.
	// +optional
	ClientSecretRef *SecretKeySelector `json:"clientSecretRef,omitempty"`

	// authorizationServer is the issuer URL of the authorization server
	// (RFC 8414). Unset: the one the server's protected resource metadata
	// names (RFC 9728), the first when it names several.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="spec.auth.perPerson.authorizationServer must be an http(s) URL"
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getHostname() != ''",message="spec.auth.perPerson.authorizationServer must be an absolute URL with a host"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@') && !self.contains('?') && !self.contains('#')",message="spec.auth.perPerson.authorizationServer is an issuer identifier: no user information, query or fragment (RFC 8414)"
	AuthorizationServer string `json:"authorizationServer,omitempty"`

	// scopes are requested at consent. Add offline_access (or what the
	// authorization server asks for) to be issued a refresh token.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^[\x21\x23-\x5B\x5D-\x7E]+$`
	Scopes []string `json:"scopes,omitempty"`

	// discoverySecretRef names the Secret key holding the bearer token used
	// for imports and health probes, which act for no person. Unset: they
	// present nothing, and a server that requires a token is reported
	// reachable but not imported (ReachableUnauthenticated).
	// +optional
	DiscoverySecretRef *SecretKeySelector `json:"discoverySecretRef,omitempty"`
}

// BearerAuth authenticates with a bearer token read from a Secret.
type BearerAuth struct {
	// secretRef names the Secret key that holds the token.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// HeaderAuth authenticates with a named header whose value is read from a
// Secret.
type HeaderAuth struct {
	// name is the HTTP header to send. It must be an HTTP token and must not
	// be a header the transport owns (Host, Content-Length, Content-Type,
	// Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, ...).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[!#$%&\\'*+.^_`|~0-9A-Za-z-]+$')",message="spec.auth.header.name must be an HTTP header name (letters, digits and !#$%&'*+.^_`|~-)"
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['host', 'content-length', 'content-type', 'content-encoding', 'transfer-encoding', 'te', 'trailer', 'connection', 'keep-alive', 'upgrade', 'expect', 'accept', 'accept-encoding', 'authorization', 'proxy-authorization', 'cookie', 'mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'last-event-id'])",message="spec.auth.header.name names a header the transport sets itself; choose another header (use spec.auth.bearer for Authorization)"
	Name string `json:"name"`

	// secretRef names the Secret key that holds the header's value.
	// +required
	SecretRef SecretKeySelector `json:"secretRef"`
}

// DelegatedAuth authenticates each tool call with a token exchanged for the
// calling actor, and imports and probes with a discovery credential.
type DelegatedAuth struct {
	// profileRef names the McpDelegationProfile in this namespace.
	// +required
	ProfileRef LocalObjectReference `json:"profileRef"`

	// audience is the audience requested in the token exchange. It must be
	// one the profile (and the actor) allows.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Audience string `json:"audience"`

	// scopes are requested in the token exchange. Each must be allowed by
	// the profile and the actor.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^[\x21\x23-\x5B\x5D-\x7E]+$`
	Scopes []string `json:"scopes,omitempty"`

	// discoverySecretRef names the Secret key holding the bearer token used
	// for imports and health probes, which act for no actor.
	// +optional
	DiscoverySecretRef *SecretKeySelector `json:"discoverySecretRef,omitempty"`
}

// DefaultImportInterval is spec.import.interval when it is not set. The API
// server applies it (the default marker below must say the same); the
// controller falls back to it only for objects stored before the default
// existed. Re-importing is how drift is found without anyone asking, so
// there is always an interval.
const DefaultImportInterval = time.Hour

// ImportSettings tunes catalog imports.
type ImportSettings struct {
	// interval re-imports the catalog periodically, so that a definition
	// the server changed is found (and stops being served) without anyone
	// asking. Between 1m and 24h; default 1h. An import of an unchanged
	// catalog writes no McpTool.
	// +optional
	// +default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="spec.import.interval must be between 1m and 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// maxPages is the most tools/list pages one import follows. An import
	// with more pages fails with reason CatalogTooLarge, changes no McpTool
	// and stalls the server until its spec changes.
	// +optional
	// +default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxPages int32 `json:"maxPages,omitempty"`

	// maxTools is the most tools one import accepts from the server. An
	// import offered more fails with reason CatalogTooLarge, changes no
	// McpTool and stalls the server until its spec changes.
	// +optional
	// +default=2000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20000
	MaxTools int32 `json:"maxTools,omitempty"`

	// maxCatalogBytes is the budget, in bytes, for all tool definitions one
	// import keeps, counted as stored (name, title, description and
	// normalised input schema, nested descriptions included). An import
	// over it fails with reason CatalogTooLarge, changes no McpTool and
	// stalls the server until its spec changes (this field raised, say), so
	// the catalog is not read again every interval. The default is 16 MiB;
	// at most 64 MiB.
	// +optional
	// +default=16777216
	// +kubebuilder:validation:Minimum=65536
	// +kubebuilder:validation:Maximum=67108864
	MaxCatalogBytes int64 `json:"maxCatalogBytes,omitempty"`
}

// DefaultHealthCheckInterval is spec.healthCheck.interval when it is not
// set. The API server applies it (the default marker below must say the
// same); the controller falls back to it only for objects stored before the
// default existed.
const DefaultHealthCheckInterval = 60 * time.Second

// HealthCheckSettings tunes the health probe.
type HealthCheckSettings struct {
	// interval between health probes; a jitter of up to a tenth is added.
	// At least 5s.
	// +optional
	// +default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s')",message="spec.healthCheck.interval must be at least 5s"
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// McpServerStatus is what the controllers observed of the server.
type McpServerStatus struct {
	// conditions are Ready, Reachable, CatalogSynced, CredentialsResolved,
	// Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the generation last reconciled. The API server
	// shows -1 until the first reconcile writes status; a status sent with
	// a create is dropped.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// serverInfo is what the server said about itself at the last contact.
	// It is informational and never used to authorise anything.
	// +optional
	ServerInfo *ServerInfo `json:"serverInfo,omitempty"`

	// lastContactTime is when an operation with the server last completed,
	// as of the last status write. While nothing else about the server
	// changes, a probe rewrites it only once it is 12 health intervals old
	// (at most 6 minutes), so it may lag the last probe by that much; the
	// metric mcp_catalog_server_last_contact_timestamp_seconds has every
	// contact.
	// +optional
	LastContactTime *metav1.Time `json:"lastContactTime,omitempty"`

	// lastContactLatency is how long that operation took.
	// +optional
	LastContactLatency *metav1.Duration `json:"lastContactLatency,omitempty"`

	// lastImportTime is when the catalog was last imported successfully.
	// +optional
	LastImportTime *metav1.Time `json:"lastImportTime,omitempty"`

	// tools counts the catalog as last imported.
	// +optional
	Tools *ToolCounts `json:"tools,omitempty"`

	// skippedTools lists tools the last import refused, with a reason each.
	// The list is bounded; tools.skipped has the full count.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	SkippedTools []SkippedTool `json:"skippedTools,omitempty"`

	// lastHandledImportAt echoes the value of the
	// mcp.catalog.dev/requested-import-at annotation last acted on; a value
	// longer than 256 characters is recorded as "sha256:<hex>" of it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LastHandledImportAt string `json:"lastHandledImportAt,omitempty"`

	// lastHandledProbeAt echoes the value of the
	// mcp.catalog.dev/requested-probe-at annotation last acted on; a value
	// longer than 256 characters is recorded as "sha256:<hex>" of it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LastHandledProbeAt string `json:"lastHandledProbeAt,omitempty"`
}

// ServerInfo is the server's self-description from the handshake.
type ServerInfo struct {
	// name the server reported.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`

	// title the server reported.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// version the server reported.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Version string `json:"version,omitempty"`

	// protocolVersion is the MCP revision spoken with the server.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ProtocolVersion string `json:"protocolVersion,omitempty"`

	// capabilities the server declared (names only).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	Capabilities []string `json:"capabilities,omitempty"`
}

// ToolCounts counts a server's catalog.
type ToolCounts struct {
	// offered is how many tools the server listed at the last import.
	// +required
	Offered int32 `json:"offered"`
	// imported is how many of them were accepted as McpTools.
	// +required
	Imported int32 `json:"imported"`
	// skipped is how many were refused (see skippedTools).
	// +required
	Skipped int32 `json:"skipped"`
	// enabled is how many McpTools of this server are enabled.
	// +required
	Enabled int32 `json:"enabled"`
	// removed is how many enabled McpTools the server no longer offers.
	// +required
	Removed int32 `json:"removed"`
	// definitionBytes is the size of the definitions the last import
	// accepted, counted as stored; it is what the server's tools count
	// against the namespace's limit of definition bytes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DefinitionBytes int64 `json:"definitionBytes,omitempty"`
}

// SkippedTool is a tool an import refused.
type SkippedTool struct {
	// name as the server sent it, made printable and truncated.
	// +required
	// +kubebuilder:validation:MaxLength=160
	Name string `json:"name"`

	// reason is a fixed CamelCase word saying why it was refused.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcps,categories={mcp,mcp-catalog}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 45 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name of an McpServer must be a DNS label of at most 45 characters (lowercase letters, digits and '-'), because it prefixes the names of its McpTools"
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.dataClass`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
// +kubebuilder:printcolumn:name="Tools",type=integer,JSONPath=`.status.tools.imported`
// +kubebuilder:printcolumn:name="Last Contact",type=date,JSONPath=`.status.lastContactTime`,description="Last completed probe or import; while nothing else changes, refreshed every 12 health intervals (at most 6 minutes)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`

// McpServer declares a remote MCP server whose catalog is imported into
// McpTools.
type McpServer struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the declaration.
	// +required
	Spec McpServerSpec `json:"spec"`

	// status is what the controllers observed.
	// +optional
	// +default={"observedGeneration":-1}
	Status McpServerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpServerList is a list of McpServers.
type McpServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpServer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpServer{}, &McpServerList{})
}

// EffectApproval keys a server's approval on its tools' reviewed effects.
type EffectApproval struct {
	// exemptReadOnly lifts approvalRequired from the tools a person
	// reviewed as read-only for their approved definition. A tool's own
	// spec.approvalRequired, requiredFor, an McpSharedServer and an
	// McpAccessPolicy can still require approval of them.
	// +optional
	ExemptReadOnly bool `json:"exemptReadOnly,omitempty"`

	// requiredFor are effects whose tools need approval even where
	// approvalRequired is false.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	RequiredFor []ToolEffect `json:"requiredFor,omitempty"`
}
