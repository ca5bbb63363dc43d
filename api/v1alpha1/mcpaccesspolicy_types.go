package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// McpAccessPolicySpec sets the data-class ceiling of callers of the gateway:
// the ServiceAccounts it names, in its own namespace, and the users and
// groups it names calling at this namespace's endpoint, may use tools whose
// effective data class is at most maxDataClass. A caller no policy names
// gets the Public ceiling. Who may write these objects is the platform's
// decision, made with RBAC; see docs/adr/005-gateway-policy.md.
// +kubebuilder:validation:XValidation:rule="has(self.serviceAccounts) || has(self.users) || has(self.groups)",message="name at least one of serviceAccounts, users or groups"
type McpAccessPolicySpec struct {
	// serviceAccounts are the names of ServiceAccounts in this namespace the
	// ceiling applies to; "*" names every ServiceAccount of the namespace
	// (and no user).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`

	// users are Kubernetes user names, as the gateway maps a person's OAuth
	// access token (the issuer's username claim with its prefix, as the API
	// server's OIDC options make it), that the ceiling applies to when they
	// call at this namespace's endpoint. No wildcard.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:XValidation:rule="!self.startsWith('system:')",message="a user name in system: is never an OAuth identity; name ServiceAccounts in serviceAccounts"
	Users []string `json:"users,omitempty"`

	// groups are Kubernetes group names, as the gateway maps a person's
	// OAuth access token (the issuer's groups claim with its prefix), whose
	// members the ceiling applies to when they call at this namespace's
	// endpoint. No wildcard.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:XValidation:rule="!self.startsWith('system:')",message="a group in system: is never an OAuth identity's"
	Groups []string `json:"groups,omitempty"`

	// maxDataClass is the highest effective data class these callers may
	// list and call.
	// +required
	MaxDataClass DataClass `json:"maxDataClass"`

	// approvalMode is how these callers' calls of tools that require
	// approval are approved. Person (the default) creates an
	// McpCallApproval that a person other than the caller decides with
	// RBAC on that object. ClientElicitation asks the agent's own MCP
	// client instead, which suits interactive clients with a human at the
	// keyboard and cannot tell that human from the client itself; it is an
	// opt-in of whoever writes this policy, never of the agent. A caller
	// any matching policy opts in gets ClientElicitation.
	// +optional
	// +default="Person"
	ApprovalMode ApprovalMode `json:"approvalMode,omitempty"`

	// approvalRequiredFor makes these callers' calls of tools with any of
	// these reviewed effects (McpTool spec.reviewedEffects; a tool nobody
	// reviewed has every effect) need approval, whatever the tool's server
	// declares. A policy can add approval this way, never lift it; a caller
	// any matching policy requires it of needs it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	ApprovalRequiredFor []ToolEffect `json:"approvalRequiredFor,omitempty"`

	// maxDataClassByEffect lowers maxDataClass for tools with an effect:
	// such a tool is within this policy's ceiling only when its class is at
	// most the lowest maxDataClass of the entries its effects match (and
	// maxDataClass). Read-only tools can so be allowed a higher class than
	// writes.
	// +optional
	// +listType=map
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=4
	MaxDataClassByEffect []EffectCeiling `json:"maxDataClassByEffect,omitempty"`

	// resultInspection says what the gateway does with a result, of any
	// tool these callers call, in which it finds hidden characters,
	// instruction-like text or a credential in a known format, before the
	// agent reads it. Unset kinds take the defaults: hidden characters and
	// credentials are redacted, instruction-like text is annotated. Where
	// several policies name a caller, the strictest action of those set
	// applies to each kind.
	// +optional
	ResultInspection *ResultInspection `json:"resultInspection,omitempty"`

	// writeDown keeps these callers from writing down: once one has
	// received a result of class fromDataClass or higher, a call of a tool
	// of a lower class, or of one whose reviewed effects are open-world,
	// is refused or needs a person's approval until the window has passed
	// since that read. Where several policies name a caller, Refuse wins,
	// and the longest window and the lowest fromDataClass apply. Reads
	// before a caller is named are not counted.
	// +optional
	WriteDown *WriteDownRule `json:"writeDown,omitempty"`
}

// WriteDownRule is the no-write-down rule of an McpAccessPolicy.
type WriteDownRule struct {
	// action is what happens to a call the rule holds back: Refuse (the
	// default), or RequireApproval (a person's approval, as section 6 of
	// the gateway's documentation describes, in the policy's approvalMode).
	// +optional
	// +default="Refuse"
	Action WriteDownAction `json:"action,omitempty"`

	// window is how long a read counts. Between 1m and 720h; default 1h.
	// +optional
	// +default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="spec.writeDown.window must be between 1m and 720h"
	Window *metav1.Duration `json:"window,omitempty"`

	// fromDataClass is the lowest class whose results raise the mark;
	// default Internal. Public never does.
	// +optional
	// +default="Internal"
	// +kubebuilder:validation:XValidation:rule="self != 'Public'",message="Public data raises no mark; fromDataClass is Internal or higher"
	FromDataClass DataClass `json:"fromDataClass,omitempty"`
}

// WriteDownAction is what happens to a call the write-down rule holds
// back.
// +kubebuilder:validation:Enum=Refuse;RequireApproval
type WriteDownAction string

const (
	// WriteDownRefuse refuses the call.
	WriteDownRefuse WriteDownAction = "Refuse"
	// WriteDownRequireApproval makes the call need a person's approval.
	WriteDownRequireApproval WriteDownAction = "RequireApproval"
)

// ResultInspection is the action for each kind of finding in a result.
type ResultInspection struct {
	// hiddenCharacters are control, format, bidirectional, variation and
	// tag characters and the others a person does not see. Default Redact
	// (they are removed).
	// +optional
	HiddenCharacters InspectionAction `json:"hiddenCharacters,omitempty"`

	// instructionLike is text addressing the model that reads the result
	// ("ignore previous instructions", pseudo-markup such as <system>), the
	// phrases drift detection flags in definitions. Default Annotate.
	// +optional
	InstructionLike InspectionAction `json:"instructionLike,omitempty"`

	// secrets are credentials in known formats: code host, chat and cloud
	// provider tokens, API keys, JWTs and PEM private keys. Default Redact.
	// +optional
	Secrets InspectionAction `json:"secrets,omitempty"`

	// maxResultBytes withholds a result whose text is longer. Unset: no
	// limit beyond the gateway's own.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	MaxResultBytes *int64 `json:"maxResultBytes,omitempty"`

	// blockedContentTypes are the kinds of parts other than text that
	// results do not carry to the callers the policy names: Image, Audio,
	// Resource (an embedded resource) and ResourceLink. Such a part is
	// removed and a note says so; all four leave text only. Unset: none
	// blocked, within the tool's spec.maxContentBytes. Where several
	// policies name a caller, what any of them blocks is blocked.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4
	BlockedContentTypes []ResultContentType `json:"blockedContentTypes,omitempty"`

	// mimeTypes are the media types that images, audio and embedded
	// resources carrying bytes may have: "image/png", or "image/*" for
	// every subtype of one type. A part of another type (or of none) is
	// removed and a note says so. Unset: any. Where several policies name
	// a caller, a type passes only if each of them that sets mimeTypes
	// allows it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=127
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9][a-z0-9!#$&^_.+-]*/(\*|[a-z0-9][a-z0-9!#$&^_.+-]*)$`
	MimeTypes []string `json:"mimeTypes,omitempty"`
}

// ResultContentType is a kind of result part other than text.
// +kubebuilder:validation:Enum=Image;Audio;Resource;ResourceLink
type ResultContentType string

const (
	ResultContentImage        ResultContentType = "Image"
	ResultContentAudio        ResultContentType = "Audio"
	ResultContentResource     ResultContentType = "Resource"
	ResultContentResourceLink ResultContentType = "ResourceLink"
)

// InspectionAction is what the gateway does with a result in which it
// found something: Annotate passes it led by a note saying what was found,
// Redact replaces what was found and adds the note, Refuse withholds the
// result.
// +kubebuilder:validation:Enum=Annotate;Redact;Refuse
type InspectionAction string

const (
	InspectionAnnotate InspectionAction = "Annotate"
	InspectionRedact   InspectionAction = "Redact"
	InspectionRefuse   InspectionAction = "Refuse"
)

// EffectCeiling is the highest data class of tools with an effect.
type EffectCeiling struct {
	// effect the entry applies to.
	// +required
	Effect ToolEffect `json:"effect"`

	// maxDataClass for tools with the effect.
	// +required
	MaxDataClass DataClass `json:"maxDataClass"`
}

// ApprovalMode is how a call that requires approval is approved.
// +kubebuilder:validation:Enum=Person;ClientElicitation
type ApprovalMode string

const (
	// ApprovalPerson: a person other than the caller decides an
	// McpCallApproval.
	ApprovalPerson ApprovalMode = "Person"
	// ApprovalClientElicitation: the agent's own MCP client answers an
	// elicitation.
	ApprovalClientElicitation ApprovalMode = "ClientElicitation"
)

// McpAccessPolicyStatus is what the controller observed.
type McpAccessPolicyStatus struct {
	// conditions are Ready and Stalled. Ready is False, and Stalled True,
	// with the reason InvalidSpec when the spec is invalid in a way the API
	// server does not check (a "*" beside other names in serviceAccounts,
	// say); the message names the field.
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
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcpap,categories={mcp,mcp-catalog}
// +kubebuilder:printcolumn:name="Max Class",type=string,JSONPath=`.spec.maxDataClass`
// +kubebuilder:printcolumn:name="Approval",type=string,JSONPath=`.spec.approvalMode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`

// McpAccessPolicy is the platform's declaration of how sensitive the tools
// a namespace's agents may use through the gateway can be.
type McpAccessPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the declaration.
	// +required
	Spec McpAccessPolicySpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	// +default={"observedGeneration":-1}
	Status McpAccessPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpAccessPolicyList is a list of McpAccessPolicies.
type McpAccessPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpAccessPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpAccessPolicy{}, &McpAccessPolicyList{})
}
