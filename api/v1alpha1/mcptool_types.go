package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Effect values of an McpTool (status.effect): what the gate takes its
// calls to do. A tool is a non-idempotent write, whatever its annotations
// claim, unless a person reviewed its effects (spec.reviewedEffects) for
// its approved definition.
const (
	EffectNonIdempotentWrite = "NonIdempotentWrite"
	EffectIdempotentWrite    = "IdempotentWrite"
	EffectReadOnly           = "ReadOnly"
)

// McpToolSpec is the human and GitOps side of a tool: which remote tool it
// is, whether it is enabled, and optional tightening of the server's
// declaration. Nothing here can loosen what the McpServer declares.
type McpToolSpec struct {
	// serverRef names the McpServer in this namespace that offers the tool.
	// Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.serverRef is immutable"
	ServerRef LocalObjectReference `json:"serverRef"`

	// remoteName is the tool's name on the server (case-sensitive,
	// [A-Za-z0-9_.-], 1 to 128 characters). Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]{1,128}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.remoteName is immutable"
	RemoteName string `json:"remoteName"`

	// enabled makes the tool servable through the gateway. Imports never
	// change it.
	// +optional
	// +default=false
	Enabled bool `json:"enabled,omitempty"`

	// dataClass may raise the tool's class above the server's; the effective
	// class is the higher of the two.
	// +optional
	DataClass DataClass `json:"dataClass,omitempty"`

	// approvalRequired may only be true: it requires approval even where the
	// server does not.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == true",message="spec.approvalRequired on an McpTool can only tighten the server's declaration: set true or leave it unset"
	ApprovalRequired *bool `json:"approvalRequired,omitempty"`

	// approvedDefinitionHash is the one definition of the tool a person
	// approved. The tool is servable only while status.definitionHash
	// equals it; unset, the tool is not servable at all. Enabling approves
	// nothing: set it to the status.definitionHash you reviewed (or run
	// kubectl mcp approve), and again whenever the definition changes. It
	// lives in spec so that Git can pin it and it survives the tool being
	// deleted and created again.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +kubebuilder:validation:MaxLength=71
	ApprovedDefinitionHash string `json:"approvedDefinitionHash,omitempty"`

	// reviewedText is the text agents read of the tool instead of the
	// server's: a title, a description and descriptions of its arguments,
	// each replacing the server's where it is set. Once it is set, the input
	// schema agents read carries no other description of the server's (of
	// the schema, of nested arguments, of arguments it does not name);
	// argument names and enum values stay. What an agent reads is
	// an instruction to its model, so the platform decides it; the
	// server's own text stays in status for reviewers, and the approval
	// (approvedDefinitionHash) stays the approval of the server's
	// definition, so a changed server definition is not served until it is
	// approved again, whatever text hides it. A parameter the server's
	// schema does not have makes the tool unservable, with the condition
	// ReviewedTextValid=False.
	// +optional
	ReviewedText *ReviewedText `json:"reviewedText,omitempty"`

	// argumentRules narrow what a call of the tool may carry: arguments the
	// gateway sets itself, hidden from agents, and CEL rules every call's
	// arguments must pass. A rule that does not compile, or a fixed
	// argument the server's schema does not have, makes the tool
	// unservable, with the condition ArgumentRulesValid=False.
	// +optional
	ArgumentRules *ArgumentRules `json:"argumentRules,omitempty"`

	// reviewedEffects are what a person confirmed, or set instead, of what
	// the tool's calls do, for one definition of the tool. The server's
	// hints (status.hints) never decide anything; these do: an McpServer's
	// spec.approvalByEffect and an McpAccessPolicy's approvalRequiredFor
	// and maxDataClassByEffect key on them, and agents are shown them as
	// the tool's hints. They apply only while definitionHash equals
	// spec.approvedDefinitionHash; otherwise, or when unset, the tool is
	// treated as a destructive, non-idempotent, open-world write.
	// +optional
	ReviewedEffects *ReviewedEffects `json:"reviewedEffects,omitempty"`

	// maxContentBytes bounds the bytes of a result's parts that are not
	// text (images, audio, binary embedded resources), decoded, that the
	// gateway passes to agents: a result with more is refused. 0 passes
	// none (they are dropped, with a note). Unset: 1 MiB, except for a
	// tool whose effective data class is Restricted, whose results carry
	// no such parts unless this is set: they cannot be screened as text
	// is.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=67108864
	MaxContentBytes *int64 `json:"maxContentBytes,omitempty"`

	// interaction is what the tool's server may ask the calling agent
	// during a call: an elicitation (a form the user fills, or a URL the
	// user opens) or a sampling request (a completion from the agent's
	// model). What is allowed is relayed to the agent that made the call
	// and to no one else; what is not is refused for it (an elicitation
	// declined, a sampling request answered with an error) and never
	// reaches the agent. Each is audited without its content. Unset: form
	// elicitation relayed, no URL elicitation, no sampling.
	// +optional
	Interaction *ToolInteraction `json:"interaction,omitempty"`
}

// ToolInteraction is what a tool's server may ask the calling agent
// during a call.
type ToolInteraction struct {
	// sampling lets the server ask the agent's client for a completion of
	// its model (sampling/createMessage), which spends the agent's model
	// and can carry any text to it. Off unless true.
	// +optional
	// +default=false
	Sampling bool `json:"sampling,omitempty"`

	// formElicitation says whether the server may ask the user to fill a
	// form: Allowed (the default) or Refused.
	// +optional
	// +kubebuilder:validation:Enum=Allowed;Refused
	// +default="Allowed"
	FormElicitation FormElicitation `json:"formElicitation,omitempty"`

	// sensitiveFields are form fields the server may not ask for, by
	// name (a password, a token, an account number): a form naming one is
	// refused whole. A field whose schema says "format": "password" is
	// refused too, listed or not. Forms are for what is not sensitive;
	// what is goes through a URL the user opens (urlElicitationHosts).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	SensitiveFields []string `json:"sensitiveFields,omitempty"`

	// urlElicitationHosts are the hosts a URL-mode elicitation may send
	// the user to, over https only: a host name ("login.example.com"), or
	// "*." and a domain for any host below it ("*.example.com" matches
	// "a.example.com", not "example.com"). Empty: URL elicitation is
	// refused.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`
	URLElicitationHosts []string `json:"urlElicitationHosts,omitempty"`
}

// FormElicitation says whether a tool's server may ask for a form.
type FormElicitation string

// The values of ToolInteraction.FormElicitation.
const (
	FormElicitationAllowed FormElicitation = "Allowed"
	FormElicitationRefused FormElicitation = "Refused"
)

// DefaultMaxContentBytes is the bound on a result's non-text parts when a
// tool sets none (spec.maxContentBytes).
const DefaultMaxContentBytes int64 = 1 << 20

// ReviewedEffects are a person's review of what a tool's calls do. An
// effect left unset is the unsafe answer: not read-only, destructive, not
// idempotent, open-world.
// +kubebuilder:validation:XValidation:rule="!(has(self.readOnly) && self.readOnly && has(self.destructive) && self.destructive)",message="a tool reviewed as read-only cannot be destructive: unset destructive or set it false"
type ReviewedEffects struct {
	// definitionHash is the definition whose effects were reviewed: the
	// status.definitionHash the person read. The review applies only while
	// it equals spec.approvedDefinitionHash.
	// +required
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +kubebuilder:validation:MaxLength=71
	DefinitionHash string `json:"definitionHash"`

	// readOnly says the tool does not modify its environment. Unset: false.
	// +optional
	ReadOnly *bool `json:"readOnly,omitempty"`

	// destructive says the tool may delete or overwrite what exists. Unset:
	// true, unless readOnly is true.
	// +optional
	Destructive *bool `json:"destructive,omitempty"`

	// idempotent says calling the tool again with the same arguments does
	// nothing more. Unset: false.
	// +optional
	Idempotent *bool `json:"idempotent,omitempty"`

	// openWorld says the tool reaches entities outside the server's own domain.
	// Unset: true.
	// +optional
	OpenWorld *bool `json:"openWorld,omitempty"`
}

// ReviewedText is the text agents read of a tool, written by people instead
// of the server. An empty title or description leaves the server's in
// place; an argument it does not describe is served without a description.
type ReviewedText struct {
	// title agents see instead of the server's.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description agents see instead of the server's.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`

	// parameters replace the descriptions of the tool's arguments: each
	// names a property at the top level of the server's input schema.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Parameters []ParameterText `json:"parameters,omitempty"`
}

// ParameterText is the reviewed description of one argument.
type ParameterText struct {
	// name of a property at the top level of the tool's input schema.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`

	// description agents see instead of the server's.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Description string `json:"description"`
}

// ArgumentRules narrow the calls of a tool: arguments the gateway sets, and
// rules over the arguments. The type is meant for any object that narrows a
// tool's calls, so that a consuming namespace can later add rules of its own
// to a tool it is granted; rules from several sets all apply, and a set can
// only add to another, never remove from it.
type ArgumentRules struct {
	// fixed are arguments the gateway sets on every call. They are hidden
	// from the schema agents see, and a call that sends one is refused,
	// never overridden silently. Every reader of the McpTool can read the
	// values, and the server receives them: never put a credential here
	// (the McpServer's auth carries those, from Secrets).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Fixed []FixedArgument `json:"fixed,omitempty"`

	// rules are CEL expressions over the call's arguments (the variable
	// args, a map) as they are sent upstream, fixed arguments included;
	// every rule must evaluate to true for the call to be made. A refusal
	// names the rule and gives its message, never the arguments.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Rules []ArgumentRule `json:"rules,omitempty"`
}

// FixedArgument is an argument the gateway sets.
type FixedArgument struct {
	// name of a property at the top level of the tool's input schema.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`

	// value is the argument's value as JSON text: '"example.com"' for a
	// string, '10', 'true', '["a","b"]' or '{"k":"v"}'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// ArgumentRule is one rule over a call's arguments.
type ArgumentRule struct {
	// name identifies the rule in refusals, audit records and conditions.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// expression is a CEL expression that evaluates to true for arguments
	// the rule allows, for example
	// args.to.all(r, r.endsWith('@example.com')). args is a map from
	// argument name to value; test an optional argument with has(args.x).
	// The functions are those of Kubernetes validation rules.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`

	// message is what the agent is told when the rule refuses a call.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// ToolHints are the server's annotations about its tool. They are shown as
// untrusted hints and never used to authorise anything.
type ToolHints struct {
	// title hint.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`
	// readOnlyHint as the server sent it.
	// +optional
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// destructiveHint as the server sent it.
	// +optional
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// idempotentHint as the server sent it.
	// +optional
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// openWorldHint as the server sent it.
	// +optional
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// McpToolStatus is the controller side of a tool.
type McpToolStatus struct {
	// conditions are Ready (servable) and Imported, and ReviewedTextValid
	// and ArgumentRulesValid while the spec sets reviewed text or argument
	// rules.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the generation last reconciled. The API server
	// shows -1 until the first reconcile writes status; a status sent with
	// a create is dropped.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// localName is the name agents see: mcp_<server>_<remoteName>.
	// +optional
	// +kubebuilder:validation:MaxLength=192
	LocalName string `json:"localName,omitempty"`

	// group is mcp_<server>.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Group string `json:"group,omitempty"`

	// title the server gave the tool.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description the server gave the tool.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`

	// inputSchema is the normalised JSON Schema of the tool's arguments.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +mapType=atomic
	InputSchema *apiextensionsv1.JSON `json:"inputSchema,omitempty"`

	// outputSchema is the JSON Schema the server says the tool's
	// structured results conform to, as it sent it (keys sorted, control
	// characters removed); absent when it sent none. The gateway checks
	// every structured result against the approved one.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +mapType=atomic
	OutputSchema *apiextensionsv1.JSON `json:"outputSchema,omitempty"`

	// hints are the server's annotations, untrusted.
	// +optional
	Hints *ToolHints `json:"hints,omitempty"`

	// taskSupport is the server's execution.taskSupport for the tool
	// (forbidden, optional, required): whether it may, or must, be called
	// as a task (2025-11-25). Absent when the server said nothing, which
	// means forbidden. Not part of the definition hash: it says how a call
	// is answered, not what the tool does.
	// +optional
	// +kubebuilder:validation:Enum=forbidden;optional;required
	TaskSupport string `json:"taskSupport,omitempty"`

	// effectiveDataClass is the higher of the server's and the tool's class,
	// as last reconciled: a report; the gateway computes it from spec on
	// every call.
	// +optional
	EffectiveDataClass DataClass `json:"effectiveDataClass,omitempty"`

	// effectiveApprovalRequired is the server's or the tool's requirement,
	// as last reconciled: a report; the gateway computes it from spec on
	// every call.
	// +optional
	EffectiveApprovalRequired *bool `json:"effectiveApprovalRequired,omitempty"`

	// effect is what the gate takes the tool's calls to do:
	// NonIdempotentWrite unless a person reviewed its effects for the
	// approved definition (spec.reviewedEffects), then ReadOnly,
	// IdempotentWrite or NonIdempotentWrite as reviewed. A report; the
	// gateway reads the spec on every call.
	// +optional
	// +kubebuilder:validation:Enum=NonIdempotentWrite;IdempotentWrite;ReadOnly
	Effect string `json:"effect,omitempty"`

	// requiresAdmin is always true: nobody may call a tool unless RBAC
	// grants it explicitly.
	// +optional
	RequiresAdmin bool `json:"requiresAdmin,omitempty"`

	// definitionHash is the hash of the normalised definition (name, title,
	// description, input schema and hints), "sha256:<hex>".
	// +optional
	// +kubebuilder:validation:MaxLength=71
	DefinitionHash string `json:"definitionHash,omitempty"`

	// approvedDefinition is the text of the approved definition, kept by the
	// importer when it replaces that definition with a changed one, so that a
	// person can review what changed. It is absent when the approved text
	// was never seen by the importer (approved after it was replaced), and
	// only describes the approval while its hash is
	// spec.approvedDefinitionHash: after a new approval it is stale until
	// the next import drops it. It is a record for review, never an
	// approval: the approval is spec.approvedDefinitionHash.
	// +optional
	ApprovedDefinition *ToolDefinition `json:"approvedDefinition,omitempty"`

	// drift says how the current definition differs from the one it is
	// compared with, in categories a reviewer acts on. The importer sets it
	// when it records a changed definition, and when it first records a
	// definition with findings of its own (hidden characters,
	// instruction-like text or URLs); it is removed when the server offers
	// the approved definition again. It is a warning for review, never an
	// approval: the approval is spec.approvedDefinitionHash.
	// +optional
	Drift *DefinitionDrift `json:"drift,omitempty"`
}

// DriftCategory is one kind of change of a tool's definition that a
// reviewer acts on:
// TextChanged (a title or description changed),
// InstructionsAdded (instruction-like text or URLs added),
// HiddenCharacters (control, zero-width or other default-ignorable
// characters, bidirectional controls, variation selectors or Unicode tag
// characters present, or controls the import removed),
// SchemaWidened (the input schema accepts arguments it refused),
// SchemaChanged (the schema changed without accepting more),
// OutputSchemaWidened (the output schema admits results it refused),
// OutputSchemaChanged (the output schema changed without admitting more),
// HintsRelaxed (read-only to writing, non-destructive to destructive,
// closed to open world),
// HintsChanged (a hint changed without promising less) and
// HeadersChanged (the arguments mirrored into Mcp-Param-* headers changed).
// +kubebuilder:validation:Enum=TextChanged;InstructionsAdded;HiddenCharacters;SchemaWidened;SchemaChanged;OutputSchemaWidened;OutputSchemaChanged;HintsRelaxed;HintsChanged;HeadersChanged
type DriftCategory string

// DefinitionDrift explains a definition the importer recorded.
type DefinitionDrift struct {
	// fromHash is the definition compared with: the approved definition
	// when its text is on record (status.approvedDefinition, or the
	// definition it replaced), otherwise the definition the import
	// replaced. It is empty when the tool was first imported: the
	// categories are then the checks of the definition alone.
	// +optional
	// +kubebuilder:validation:MaxLength=71
	FromHash string `json:"fromHash,omitempty"`

	// toHash is the definition the categories describe, the
	// status.definitionHash the importer recorded with them.
	// +required
	// +kubebuilder:validation:MinLength=71
	// +kubebuilder:validation:MaxLength=71
	ToHash string `json:"toHash"`

	// categories are the kinds of change found, sorted, each once.
	// +required
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	Categories []DriftCategory `json:"categories"`

	// details say where each finding is (a field, or a JSON pointer into
	// the input schema) and what kind it is, never the server's text;
	// sorted, at most 32.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	Details []string `json:"details,omitempty"`

	// observedTime is when the importer recorded the definition.
	// +required
	ObservedTime metav1.Time `json:"observedTime"`
}

// ToolDefinition is one definition of a tool as the importer stored it.
type ToolDefinition struct {
	// hash of this definition, "sha256:<hex>".
	// +required
	// +kubebuilder:validation:MinLength=71
	// +kubebuilder:validation:MaxLength=71
	Hash string `json:"hash"`

	// title the server gave the tool.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description the server gave the tool.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`

	// inputSchema is the normalised JSON Schema of the tool's arguments.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +mapType=atomic
	InputSchema *apiextensionsv1.JSON `json:"inputSchema,omitempty"`

	// outputSchema is the JSON Schema the server says the tool's
	// structured results conform to, as it sent it (keys sorted, control
	// characters removed); absent when it sent none. The gateway checks
	// every structured result against the approved one.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +mapType=atomic
	OutputSchema *apiextensionsv1.JSON `json:"outputSchema,omitempty"`

	// hints are the server's annotations, untrusted.
	// +optional
	Hints *ToolHints `json:"hints,omitempty"`

	// taskSupport is the server's execution.taskSupport for the tool
	// (forbidden, optional, required): whether it may, or must, be called
	// as a task (2025-11-25). Absent when the server said nothing, which
	// means forbidden. Not part of the definition hash: it says how a call
	// is answered, not what the tool does.
	// +optional
	// +kubebuilder:validation:Enum=forbidden;optional;required
	TaskSupport string `json:"taskSupport,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcpt,categories={mcp,mcp-catalog}
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.serverRef.name`
// +kubebuilder:printcolumn:name="Remote Name",type=string,JSONPath=`.spec.remoteName`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.spec.enabled`
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.status.effectiveDataClass`
// +kubebuilder:printcolumn:name="Approval",type=boolean,JSONPath=`.status.effectiveApprovalRequired`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`

// McpTool is one tool of an McpServer's catalog. Imports create it disabled;
// a human or GitOps enables it and approves its definition.
type McpTool struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the human and GitOps side.
	// +required
	Spec McpToolSpec `json:"spec"`

	// status is the controller side.
	// +optional
	// +default={"observedGeneration":-1}
	Status McpToolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpToolList is a list of McpTools.
type McpToolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpTool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpTool{}, &McpToolList{})
}
