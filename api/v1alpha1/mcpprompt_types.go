package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// McpPromptSpec is the human and GitOps side of a prompt: which remote
// prompt it is, whether it is enabled, the one definition a person
// approved, and optional tightening of the server's data class. Nothing
// here can loosen what the McpServer declares.
type McpPromptSpec struct {
	// serverRef names the McpServer in this namespace that offers the
	// prompt. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.serverRef is immutable"
	ServerRef LocalObjectReference `json:"serverRef"`

	// remoteName is the prompt's name on the server (case-sensitive,
	// [A-Za-z0-9_.-], 1 to 128 characters). Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]{1,128}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.remoteName is immutable"
	RemoteName string `json:"remoteName"`

	// enabled makes the prompt servable through the gateway. Imports never
	// change it.
	// +optional
	// +default=false
	Enabled bool `json:"enabled,omitempty"`

	// dataClass may raise the prompt's class above the server's; the
	// effective class is the higher of the two.
	// +optional
	DataClass DataClass `json:"dataClass,omitempty"`

	// approvedDefinitionHash is the one definition of the prompt a person
	// approved. The prompt is servable only while status.definitionHash
	// equals it; unset, it is not servable at all.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +kubebuilder:validation:MaxLength=71
	ApprovedDefinitionHash string `json:"approvedDefinitionHash,omitempty"`

	// reviewedText is the text agents read of the prompt instead of the
	// server's: a title, a description and descriptions of its arguments,
	// each replacing the server's where it is set. Once it is set, an
	// argument it does not describe is served without a description. The
	// approval (approvedDefinitionHash) stays the approval of the server's
	// definition. An argument the server's definition does not have makes
	// the prompt unservable.
	// +optional
	ReviewedText *PromptReviewedText `json:"reviewedText,omitempty"`
}

// PromptReviewedText is the text agents read of a prompt, written by people
// instead of the server. An empty title or description leaves the server's
// in place.
type PromptReviewedText struct {
	// title agents see instead of the server's.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description agents see instead of the server's.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`

	// arguments replace the descriptions of the prompt's arguments, each
	// naming one.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Arguments []ArgumentText `json:"arguments,omitempty"`
}

// ArgumentText is the reviewed description of one argument of a prompt.
type ArgumentText struct {
	// name of an argument of the prompt's definition.
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

// PromptArgument is one argument of a prompt as the server described it.
type PromptArgument struct {
	// name of the argument.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`

	// title the server gave the argument.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description the server gave the argument.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description string `json:"description,omitempty"`

	// required says the server needs the argument.
	// +optional
	Required bool `json:"required,omitempty"`
}

// McpPromptStatus is the controller side of a prompt: the definition the
// import recorded and its hash.
type McpPromptStatus struct {
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

	// localName is the name agents see: mcp_<server>_<remoteName>.
	// +optional
	// +kubebuilder:validation:MaxLength=192
	LocalName string `json:"localName,omitempty"`

	// title the server gave the prompt.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Title string `json:"title,omitempty"`

	// description the server gave the prompt.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description string `json:"description,omitempty"`

	// arguments the server described, in its order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Arguments []PromptArgument `json:"arguments,omitempty"`

	// definitionHash is the hash of the definition (name, title,
	// description and arguments), "sha256:<hex>".
	// +optional
	// +kubebuilder:validation:MaxLength=71
	DefinitionHash string `json:"definitionHash,omitempty"`

	// drift says how the current definition differs from the one it
	// replaced, in the McpTool's categories (TextChanged,
	// InstructionsAdded, HiddenCharacters, SchemaWidened for an argument
	// added or no longer required, SchemaChanged); on a first import, what
	// the checks of the definition alone found. It is removed when the
	// server offers the approved definition again. A warning for review,
	// never an approval.
	// +optional
	Drift *DefinitionDrift `json:"drift,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcpp,categories={mcp,mcp-catalog}
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.serverRef.name`
// +kubebuilder:printcolumn:name="Remote Name",type=string,JSONPath=`.spec.remoteName`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.spec.enabled`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// McpPrompt is one prompt of an McpServer. Imports create it disabled; a
// human or GitOps enables it and approves its definition
// (docs/adr/065-prompts-and-resources.md).
type McpPrompt struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the human and GitOps side.
	// +required
	Spec McpPromptSpec `json:"spec"`

	// status is the controller side.
	// +optional
	// +default={"observedGeneration":-1}
	Status McpPromptStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpPromptList is a list of McpPrompts.
type McpPromptList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpPrompt `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpPrompt{}, &McpPromptList{})
}

// ReviewedTextValid reports whether every argument the prompt's reviewed
// text describes is an argument of its imported definition: reviewed text
// that cannot be honoured serves the prompt to nobody.
func (p *McpPrompt) ReviewedTextValid() bool {
	if p.Spec.ReviewedText == nil {
		return true
	}
	for _, rt := range p.Spec.ReviewedText.Arguments {
		found := false
		for _, a := range p.Status.Arguments {
			found = found || a.Name == rt.Name
		}
		if !found {
			return false
		}
	}
	return true
}
