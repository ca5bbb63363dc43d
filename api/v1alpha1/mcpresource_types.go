package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultMaxReadBytes bounds a resources/read result when an McpResource
// sets no bound (spec.maxReadBytes).
const DefaultMaxReadBytes int64 = 1 << 20

// McpResourceSpec is the human and GitOps side of a resource or resource
// template: which one it is, whether it is enabled, the one definition a
// person approved, how many bytes a read may return, and optional
// tightening of the server's data class.
// +kubebuilder:validation:XValidation:rule="has(self.uri) != has(self.uriTemplate)",message="exactly one of spec.uri and spec.uriTemplate must be set"
type McpResourceSpec struct {
	// serverRef names the McpServer in this namespace that offers the
	// resource. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.serverRef is immutable"
	ServerRef LocalObjectReference `json:"serverRef"`

	// uri is the resource's URI on the server, for a resource. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.uri is immutable"
	URI string `json:"uri,omitempty"`

	// uriTemplate is the RFC 6570 URI template on the server, for a
	// resource template. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.uriTemplate is immutable"
	URITemplate string `json:"uriTemplate,omitempty"`

	// enabled makes the resource servable through the gateway. Imports
	// never change it.
	// +optional
	// +default=false
	Enabled bool `json:"enabled,omitempty"`

	// dataClass may raise the resource's class above the server's; the
	// effective class is the higher of the two.
	// +optional
	DataClass DataClass `json:"dataClass,omitempty"`

	// approvedDefinitionHash is the one definition of the resource a
	// person approved. It is servable only while status.definitionHash
	// equals it; unset, it is not servable at all.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +kubebuilder:validation:MaxLength=71
	ApprovedDefinitionHash string `json:"approvedDefinitionHash,omitempty"`

	// maxReadBytes bounds the bytes of a resources/read result, as the
	// server sent it, that the gateway passes to agents: a larger one is
	// refused, never cut. Unset: 1 MiB.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16777216
	MaxReadBytes *int64 `json:"maxReadBytes,omitempty"`

	// reviewedText is the text agents read of the resource instead of the
	// server's: a title and a description, each replacing the server's
	// where it is set. The approval (approvedDefinitionHash) stays the
	// approval of the server's definition.
	// +optional
	ReviewedText *ResourceReviewedText `json:"reviewedText,omitempty"`
}

// ResourceReviewedText is the text agents read of a resource, written by
// people instead of the server.
type ResourceReviewedText struct {
	// title agents see instead of the server's.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description agents see instead of the server's.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`
}

// McpResourceStatus is the controller side of a resource: the definition
// the import recorded and its hash.
type McpResourceStatus struct {
	// conditions are Imported, whether the last import found the object
	// on its server (False, reason RemovedFromServer, when it did not), and
	// Ready, whether the gateway serves it: enabled, the approved
	// definition, offered, its reviewed text honoured. Ready is a report;
	// the gateway decides from spec and the definition at every request.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// name the server gave the resource.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`

	// title the server gave the resource.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description the server gave the resource.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`

	// mimeType the server gave the resource.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	MimeType string `json:"mimeType,omitempty"`

	// app is true for an MCP Apps ui:// resource: its content is code a
	// host renders, so its hash is part of the definition (contentHash).
	// +optional
	App bool `json:"app,omitempty"`

	// contentHash is the SHA-256 of a ui:// resource's content as the
	// import read it, "sha256:<hex>"; the gateway serves only content with
	// this hash while the definition is the approved one.
	// +optional
	// +kubebuilder:validation:MaxLength=71
	ContentHash string `json:"contentHash,omitempty"`

	// definitionHash is the hash of the definition (URI or URI template,
	// name, title, description, MIME type, and a ui:// resource's content
	// hash), "sha256:<hex>".
	// +optional
	// +kubebuilder:validation:MaxLength=71
	DefinitionHash string `json:"definitionHash,omitempty"`

	// drift says how the current definition differs from the one it
	// replaced, in the McpTool's categories (TextChanged,
	// InstructionsAdded, HiddenCharacters); on a first import, what the
	// checks of the definition alone found. A ui:// resource whose content
	// alone changed has a new definitionHash and contentHash and no
	// category. It is removed when the server offers the approved
	// definition again. A warning for review, never an approval.
	// +optional
	Drift *DefinitionDrift `json:"drift,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcpr,categories={mcp,mcp-catalog}
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.serverRef.name`
// +kubebuilder:printcolumn:name="URI",type=string,JSONPath=`.spec.uri`
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.uriTemplate`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.spec.enabled`
// +kubebuilder:printcolumn:name="App",type=boolean,JSONPath=`.status.app`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// McpResource is one resource or resource template of an McpServer,
// ui:// resources of MCP Apps included. Imports create it disabled; a human
// or GitOps enables it and approves its definition
// (docs/adr/065-prompts-and-resources.md).
type McpResource struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the human and GitOps side.
	// +required
	Spec McpResourceSpec `json:"spec"`

	// status is the controller side.
	// +optional
	// +default={"observedGeneration":-1}
	Status McpResourceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpResourceList is a list of McpResources.
type McpResourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpResource `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpResource{}, &McpResourceList{})
}
