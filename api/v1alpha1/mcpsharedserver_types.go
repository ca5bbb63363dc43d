package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SharedServerReference names an McpServer of another namespace.
type SharedServerReference struct {
	// namespace is the McpServer's namespace: the owner's.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// name is the McpServer's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// McpSharedServerSpec is a namespace's acceptance of an McpServer another
// namespace shares with it, and how this namespace narrows what it
// receives. Nothing here can widen the owner's decisions: the owner's
// enablement, approvals, data class, approval requirement and argument
// rules always apply.
type McpSharedServerSpec struct {
	// server is the shared McpServer. It is used only while its owner's
	// spec.sharing grants this namespace.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.server is immutable; create another McpSharedServer"
	Server SharedServerReference `json:"server"`

	// disabledTools are remote tool names this namespace does not use,
	// enabled by the owner or not.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_.-]+$`
	DisabledTools []string `json:"disabledTools,omitempty"`

	// maxDataClass is the highest effective data class of the shared
	// tools this namespace uses; a tool above it is not offered here. It
	// applies together with the namespace's McpAccessPolicies: the lower
	// ceiling wins.
	// +optional
	MaxDataClass DataClass `json:"maxDataClass,omitempty"`

	// approvalRequired true makes every call of a shared tool from this
	// namespace wait for a person's approval (an McpCallApproval in this
	// namespace), whatever the owner declares. false leaves the owner's
	// requirement as it is; it never removes one.
	// +optional
	ApprovalRequired bool `json:"approvalRequired,omitempty"`

	// argumentRules are this namespace's own rules over the arguments of
	// shared tools, by remote name, as disabledTools names them. They apply
	// after the owner's argument rules, which always apply as they are:
	// a call is made only when the owner's rules and these all allow it,
	// so they can only add to the owner's, never remove, loosen or fix an
	// argument. A rule that does not compile makes that tool unservable in
	// this namespace, with the condition ArgumentRulesValid=False.
	// +optional
	// +listType=map
	// +listMapKey=tool
	// +kubebuilder:validation:MaxItems=64
	ArgumentRules []SharedToolRules `json:"argumentRules,omitempty"`
}

// SharedToolRules are a consuming namespace's rules over the arguments of
// one shared tool. They are CEL rules as in an McpTool's
// spec.argumentRules.rules; a consumer fixes no argument.
type SharedToolRules struct {
	// tool is the remote name of a tool of the shared server.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+$`
	Tool string `json:"tool"`

	// rules are CEL expressions over the call's arguments (the variable
	// args, a map) as they are sent upstream, the owner's fixed arguments
	// included; every rule must evaluate to true for the call to be made.
	// A refusal names the rule as mcpsharedserver/<name>/<rule> and gives
	// its message, never the arguments.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Rules []ArgumentRule `json:"rules"`
}

// McpSharedServerStatus is what the controller observed. It holds only what
// the consuming namespace may know: whether the offer is in force, never
// anything of the owner's McpServer (its URL, Secrets or state).
type McpSharedServerStatus struct {
	// conditions holds Ready: True (reason Shared) while the owner's
	// McpServer exists and its spec.sharing grants this namespace; False
	// with the reason NotShared otherwise (the same reason whether the
	// server does not exist or does not grant this namespace), or
	// InvalidSpec when this object cannot be honoured (the message says
	// why). ArgumentRulesValid, present while spec.argumentRules is set,
	// is False (ArgumentRulesInvalid) naming each tool and rule that does
	// not compile; those tools are not offered here until it is fixed.
	// The rules are compiled only while the server is shared with this
	// namespace: until then ArgumentRulesValid is Unknown (NotShared).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the generation last reconciled. The API server
	// shows -1 until the first reconcile writes status.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcpss,categories={mcp,mcp-catalog}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 45 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name of an McpSharedServer must be a DNS label of at most 45 characters (lowercase letters, digits and '-'), because it names its tools (mcps_<name>_<tool>)"
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.server.namespace`
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.server.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`

// McpSharedServer accepts, in the consuming namespace, an McpServer that
// another namespace shares: the server's enabled and approved tools are
// offered to this namespace's agents as mcps_<name>_<tool>, to those RBAC
// in this namespace allows (verb call on mcptools, by that name).
type McpSharedServer struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the declaration.
	// +required
	Spec McpSharedServerSpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	// +default={"observedGeneration":-1}
	Status McpSharedServerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpSharedServerList is a list of McpSharedServers.
type McpSharedServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpSharedServer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpSharedServer{}, &McpSharedServerList{})
}
