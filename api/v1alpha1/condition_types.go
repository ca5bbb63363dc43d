package v1alpha1

// Condition types. Ready, Reachable, CatalogSynced, CredentialsResolved and
// Imported are normal-true: True is the healthy state. Reconciling and
// Stalled are abnormal-true, as kstatus reads them: they are present only
// while true.
const (
	// ConditionReady summarises an object: for an McpServer, credentials
	// resolve, the server is reachable and its catalog synced; for an
	// McpTool, the tool is servable; for a profile, it can be used.
	ConditionReady = "Ready"

	// ConditionReachable says whether the last health probe completed the
	// handshake.
	ConditionReachable = "Reachable"

	// ConditionCatalogSynced says whether the last import succeeded.
	ConditionCatalogSynced = "CatalogSynced"

	// ConditionCredentialsResolved says whether every Secret (or profile)
	// the server's auth references could be read.
	ConditionCredentialsResolved = "CredentialsResolved"

	// ConditionImported says whether the server offered the tool at the
	// last import.
	ConditionImported = "Imported"

	// ConditionReviewedTextValid says whether an McpTool's
	// spec.reviewedText can be honoured against the server's definition
	// (every parameter it describes is one the schema has). Present only
	// while the spec sets reviewed text.
	ConditionReviewedTextValid = "ReviewedTextValid"

	// ConditionArgumentRulesValid says whether an McpTool's
	// spec.argumentRules can be honoured: every rule compiles, and every
	// fixed argument is valid JSON for an argument the server's schema
	// has; on an McpSharedServer, whether every rule of its
	// spec.argumentRules compiles. Present only while the spec sets
	// argument rules.
	ConditionArgumentRulesValid = "ArgumentRulesValid"

	// ConditionEffectsReviewed says whether an McpTool's
	// spec.reviewedEffects review its approved definition, and so apply.
	// Present only while the spec sets reviewed effects.
	ConditionEffectsReviewed = "EffectsReviewed"

	// ConditionReconciling (abnormal-true) says work is in progress.
	ConditionReconciling = "Reconciling"

	// ConditionCapped (abnormal-true) says the spec asks for more than the
	// administrator allows (a catalog, tool or time budget above a cap, or a
	// health interval below the shortest allowed), and the allowed value is
	// used instead; the message names every such field. The server works
	// within the caps, so Ready does not depend on it. Present only while
	// true.
	ConditionCapped = "Capped"

	// ConditionSharingWarning (abnormal-true) says an McpServer's
	// spec.sharing trusts more than its owner may mean: its
	// namespaceSelector is {} (every namespace, present and future), or it
	// uses a label key outside the prefix the administrator reserved for
	// sharing (then it grants no namespace). Sharing works as the message
	// says, so Ready does not depend on it. Present only while true.
	ConditionSharingWarning = "SharingWarning"

	// ConditionStalled (abnormal-true) says the controller cannot make
	// progress without a change to the spec by a human; nothing is retried
	// until the spec (or a referenced object) changes. Failures that a
	// Secret rotation or the remote server can cure never stall.
	ConditionStalled = "Stalled"
)

// Condition reasons. Each is a fixed CamelCase word; no reason carries
// anything a remote server sent.
const (
	// ReasonSucceeded: the operation the condition describes succeeded.
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing: work is under way.
	ReasonProgressing = "Progressing"
	// ReasonSuspended: spec.suspend is true.
	ReasonSuspended = "Suspended"

	// ReasonSecretNotFound: a referenced Secret does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyNotFound: the referenced Secret lacks the key.
	ReasonSecretKeyNotFound = "SecretKeyNotFound"
	// ReasonSecretNotOptedIn: the referenced Secret exists but does not
	// carry LabelCredential="true", so it is not used as a credential.
	ReasonSecretNotOptedIn = "SecretNotOptedIn"
	// ReasonSecretURLInvalid: the Secret named by spec.urlFrom does not hold
	// a usable URL (absolute http(s) with a host, no user information or
	// fragment, https unless allowCredentialOverHTTP).
	ReasonSecretURLInvalid = "SecretURLInvalid"
	// ReasonCABundleNotUsable: the CA bundle spec.tls.caBundleRef names
	// cannot be used. It is the one reason for every cause (no such
	// ConfigMap or Secret, a Secret without LabelCABundle, no such key, no
	// PEM certificate or one that does not parse, the operator may not read
	// the object), so that whoever writes the reference learns nothing about
	// a Secret they may not read; the operator logs the cause at debug level.
	ReasonCABundleNotUsable = "CABundleNotUsable"
	// ReasonProfileNotFound: the referenced McpDelegationProfile is missing.
	ReasonProfileNotFound = "ProfileNotFound"
	// ReasonProfileNotReady: the referenced McpDelegationProfile is not Ready.
	ReasonProfileNotReady = "ProfileNotReady"
	// ReasonNoCredentials: the server's auth needs no credential.
	ReasonNoCredentials = "NoCredentialsNeeded"

	// ReasonInvalidSpec: the spec is invalid in a way the API server could
	// not check; the message says what to change.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonInsecureCredential: a credential would be sent over plain http.
	ReasonInsecureCredential = "InsecureCredential"
	// ReasonBlockedAddress: the URL resolves to an address that may not be
	// dialled.
	ReasonBlockedAddress = "BlockedAddress"

	// ReasonUnreachable: the server could not be connected to.
	ReasonUnreachable = "Unreachable"
	// ReasonUntrustedCertificate: the server's TLS certificate could not be
	// verified against the trusted CAs (spec.tls.caBundleRef or the system
	// roots).
	ReasonUntrustedCertificate = "UntrustedCertificate"
	// ReasonUnauthorized: the server answered 401.
	ReasonUnauthorized = "Unauthorized"
	// ReasonUnauthenticated: a delegated server answered 401 with a
	// challenge while no discovery credential is configured; it is up.
	ReasonUnauthenticated = "ReachableUnauthenticated"
	// ReasonForbidden: the server answered 403.
	ReasonForbidden = "Forbidden"
	// ReasonTimeout: the operation's budget ran out.
	ReasonTimeout = "Timeout"
	// ReasonServerError: the server answered 5xx.
	ReasonServerError = "ServerError"
	// ReasonRedirected: the server answered with a redirect, which is never
	// followed.
	ReasonRedirected = "Redirected"
	// ReasonProtocolError: the server's answer broke the MCP or JSON-RPC
	// rules.
	ReasonProtocolError = "ProtocolError"
	// ReasonResponseTooLarge: the answer exceeded the read cap.
	ReasonResponseTooLarge = "ResponseTooLarge"
	// ReasonUnsupportedProtocol: no protocol revision in common.
	ReasonUnsupportedProtocol = "UnsupportedProtocolVersion"
	// ReasonCatalogTooLarge: the page or tool ceiling was reached, or the
	// definitions exceed spec.import.maxCatalogBytes. The server is Stalled
	// and not imported again until its spec changes (a raised ceiling, say)
	// or an import is requested.
	ReasonCatalogTooLarge = "CatalogTooLarge"

	// ReasonCappedByAdministrator: a spec value is above (or, for the
	// health interval, below) what the controller's flags allow; the
	// allowed value is used (condition Capped).
	ReasonCappedByAdministrator = "CappedByAdministrator"
	// ReasonWaitingForCatalogBudget: the import is due but the bytes its
	// catalog may take are not free in the controller's budget of catalogs
	// in flight (--catalog-bytes-in-flight), or its namespace holds its
	// half of it; it is tried again shortly, without holding a worker
	// (condition Reconciling).
	ReasonWaitingForCatalogBudget = "WaitingForCatalogBudget"
	// ReasonNamespaceToolLimit: the import would take the namespace's
	// McpTools above --max-tools-per-namespace. Nothing was changed; the
	// import is retried after one health interval.
	ReasonNamespaceToolLimit = "NamespaceToolLimit"
	// ReasonNamespaceDefinitionBytesLimit: the import would take the bytes
	// of tool definitions the namespace stores above
	// --max-definition-bytes-per-namespace. Nothing was changed; the import
	// is retried after one health interval.
	ReasonNamespaceDefinitionBytesLimit = "NamespaceDefinitionBytesLimit"

	// ReasonImportFailed: the last import failed; see the message.
	ReasonImportFailed = "ImportFailed"
	// ReasonNotImported: no import has succeeded yet.
	ReasonNotImported = "NotImported"

	// ReasonRemovedFromServer: the server no longer offers the tool.
	ReasonRemovedFromServer = "RemovedFromServer"
	// ReasonDisabled: the tool is not enabled.
	ReasonDisabled = "Disabled"
	// ReasonDefinitionChanged: the tool's definition differs from the
	// approved one.
	ReasonDefinitionChanged = "DefinitionChanged"
	// ReasonDefinitionNotApproved: the tool is enabled but no definition is
	// approved (spec.approvedDefinitionHash is unset). Enabling approves
	// nothing, and a lost approval never counts as one.
	ReasonDefinitionNotApproved = "DefinitionNotApproved"
	// ReasonServerNotReady: the tool's server is not Ready.
	ReasonServerNotReady = "ServerNotReady"
	// ReasonServerNotFound: the tool's McpServer does not exist. The tool
	// is kept (deleting a server never deletes an enabled or declared tool)
	// and is servable again once the server is back.
	ReasonServerNotFound = "ServerNotFound"
	// ReasonShardMismatch: the McpTool's shard label
	// (sharding.mcp.catalog.dev/key) is not its server's, so the
	// controller instance that reconciles the server does not reconcile the
	// tool. The gateway does not serve it until the labels agree again (the
	// server's next import relabels the tool).
	ReasonShardMismatch = "ShardMismatch"
	// ReasonNameMismatch: the McpTool's name is not the one derived from its
	// server and remote name.
	ReasonNameMismatch = "NameMismatch"
	// ReasonReviewedTextInvalid: spec.reviewedText cannot be honoured (it
	// describes a parameter the server's schema does not have); the tool
	// is not served until it can.
	ReasonReviewedTextInvalid = "ReviewedTextInvalid"
	// ReasonArgumentRulesInvalid: spec.argumentRules cannot be honoured (a
	// rule does not compile, or a fixed argument is not valid JSON or not
	// an argument of the server's schema); the tool is not served until
	// they can.
	ReasonArgumentRulesInvalid = "ArgumentRulesInvalid"

	// ReasonShared: an McpSharedServer's server exists and its owner
	// shares it with the McpSharedServer's namespace.
	ReasonShared = "Shared"
	// ReasonNotShared: an McpSharedServer's server is not shared with its
	// namespace. The one reason for a server that does not exist and for
	// one whose owner does not grant the namespace, so that a consumer
	// learns nothing of another namespace's servers.
	ReasonNotShared = "NotShared"
	// ReasonSelectsEveryNamespace: an McpServer's
	// spec.sharing.namespaceSelector is {}.
	ReasonSelectsEveryNamespace = "SelectsEveryNamespace"
	// ReasonSelectorNotTrusted: an McpServer's
	// spec.sharing.namespaceSelector uses a label key outside the reserved
	// prefix, or cannot be evaluated; it grants no namespace.
	ReasonSelectorNotTrusted = "SelectorNotTrusted"
	// ReasonDisabledByConsumer: the consuming namespace's McpSharedServer
	// lists the tool in spec.disabledTools.
	ReasonDisabledByConsumer = "DisabledByConsumer"
	// ReasonConsumerRulesInvalid: a rule the consuming namespace's
	// McpSharedServer adds to the tool (spec.argumentRules) does not
	// compile; the tool is not offered in that namespace until it does.
	ReasonConsumerRulesInvalid = "ConsumerRulesInvalid"
	// ReasonEffectsReviewed: spec.reviewedEffects review the approved
	// definition and apply (EffectsReviewed True).
	ReasonEffectsReviewed = "Reviewed"
	// ReasonReviewedForAnotherDefinition: spec.reviewedEffects review a
	// definition other than the approved one, so the tool is treated as
	// unreviewed (EffectsReviewed False).
	ReasonReviewedForAnotherDefinition = "ReviewedForAnotherDefinition"
)

// Labels and annotations.
const (
	// LabelServer on an McpTool names its McpServer.
	LabelServer = "mcp.catalog.dev/server"

	// LabelShardKey on an McpServer names the controller instance (shard)
	// that reconciles it (docs/adr/019-sharding.md). The importer copies it
	// to the server's McpTools, so that a tool follows its server.
	LabelShardKey = "sharding.mcp.catalog.dev/key"

	// LabelCredential="true" on a Secret lets the operator use it as a
	// credential (or a secret URL). A Secret without it is never read for
	// its value, so that whoever may create an McpServer or
	// McpDelegationProfile cannot make the operator send an arbitrary
	// Secret of the namespace to a URL of their choosing: whoever labels the
	// Secret decides that it may leave the cluster.
	LabelCredential = "mcp.catalog.dev/credential"

	// LabelCredentialValue is the only value of LabelCredential that opts in.
	LabelCredentialValue = "true"

	// LabelCABundle="true" on a Secret lets the operator read it as a CA
	// bundle (spec.tls.caBundleRef). A CA bundle is only used to verify a
	// peer and never sent, but reading a Secret on behalf of whoever names it
	// still tells them something about it; whoever labels the Secret agrees
	// to that. A Secret labelled LabelCredential agreed to more (its value may
	// be sent), so it may be read as a bundle too. ConfigMaps need no label.
	LabelCABundle = "mcp.catalog.dev/ca-bundle"

	// LabelCABundleValue is the only value of LabelCABundle that opts in.
	LabelCABundleValue = "true"

	// AnnotationRequestedImportAt on an McpServer requests an import; any new
	// value triggers one, and status.lastHandledImportAt echoes it.
	AnnotationRequestedImportAt = "mcp.catalog.dev/requested-import-at"

	// AnnotationRequestedProbeAt on an McpServer requests a health probe now.
	AnnotationRequestedProbeAt = "mcp.catalog.dev/requested-probe-at"

	// AnnotationRegistryURL on an McpServer names the MCP registry it was
	// imported from (`kubectl mcp registry import`). Like the two below it
	// records where a draft came from; nothing in the operator or the
	// gateway reads it to decide anything (docs/adr/049-registry-metadata.md).
	AnnotationRegistryURL = "mcp.catalog.dev/registry-url"

	// AnnotationRegistryName on an McpServer is the server's name in that
	// registry (reverse-DNS, for example io.github.user/weather).
	AnnotationRegistryName = "mcp.catalog.dev/registry-name"

	// AnnotationRegistryVersion on an McpServer is the registry version it
	// was imported at; `kubectl mcp registry outdated` compares it with the
	// registry's latest and never changes it.
	AnnotationRegistryVersion = "mcp.catalog.dev/registry-version"
)
