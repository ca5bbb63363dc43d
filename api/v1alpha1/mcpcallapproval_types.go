package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CallDecision is a person's answer to a pending call.
// +kubebuilder:validation:Enum=Pending;Approved;Denied
type CallDecision string

const (
	// CallPending is an approval nobody has decided yet.
	CallPending CallDecision = "Pending"
	// CallApproved lets one call with these arguments go ahead.
	CallApproved CallDecision = "Approved"
	// CallDenied refuses the call.
	CallDenied CallDecision = "Denied"
)

// OwnerServerRef names one McpServer object: its namespace, its name, and
// its UID, which a server deleted and created again under the same name
// does not keep.
type OwnerServerRef struct {
	// namespace is the McpServer's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// name is the McpServer's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`

	// uid is the McpServer's metadata.uid.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F-]+$`
	UID string `json:"uid"`
}

// McpCallApprovalSpec is one call of a tool that waits for a person, and
// that person's decision. The gateway writes the call; the call cannot be
// changed afterwards. A person other than the caller sets decision (once)
// and decidedBy, which must be the person's own user name: the API server
// enforces both with a ValidatingAdmissionPolicy shipped with the operator.
// The arguments are never stored, only their hash: the object is readable
// by approvers who may not be cleared for the data the call carries.
// +kubebuilder:validation:XValidation:rule="self.tool == oldSelf.tool && self.localName == oldSelf.localName && self.server == oldSelf.server && self.caller == oldSelf.caller && (has(self.callerGroups) ? self.callerGroups : []) == (has(oldSelf.callerGroups) ? oldSelf.callerGroups : []) && self.dataClass == oldSelf.dataClass && self.argumentsHash == oldSelf.argumentsHash && self.definitionHash == oldSelf.definitionHash && self.expiresAt == oldSelf.expiresAt && self.seal == oldSelf.seal && has(self.ownerServer) == has(oldSelf.ownerServer) && (!has(self.ownerServer) || self.ownerServer == oldSelf.ownerServer)",message="the call an approval is for cannot be changed; only decision, decidedBy and reason are set, once"
// +kubebuilder:validation:XValidation:rule="oldSelf.decision == 'Pending' || (self.decision == oldSelf.decision && self.decidedBy == oldSelf.decidedBy && self.reason == oldSelf.reason)",message="a decision is final"
// +kubebuilder:validation:XValidation:rule="self.decision == 'Pending' ? (size(self.decidedBy) == 0 && size(self.reason) == 0) : size(self.decidedBy) > 0",message="decidedBy names who decided; an undecided approval has no decidedBy or reason"
type McpCallApprovalSpec struct {
	// tool is the McpTool called, in this namespace; for a tool shared
	// with this namespace, the name it is called by (mcps_<shared
	// server>_<tool>), which this namespace's RBAC grants.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Tool string `json:"tool"`

	// localName is the tool's name as the agent called it.
	// +required
	// +kubebuilder:validation:MaxLength=192
	LocalName string `json:"localName"`

	// server is the McpServer of the tool, or the McpSharedServer of this
	// namespace a shared tool is offered through.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Server string `json:"server"`

	// ownerServer is, for a call of a tool another namespace shares with
	// this one, the owner's McpServer the call is made to: the approval is
	// used only for calls of that server (this very object, by its UID),
	// never for another server later offered under the same shared name.
	// Sealed with the rest. Empty for a tool of this namespace.
	// +optional
	OwnerServer *OwnerServerRef `json:"ownerServer,omitempty"`

	// caller is the user name of the agent whose call waits; it can never
	// decide this approval.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Caller string `json:"caller"`

	// callerGroups are the caller's groups when it called, for the record.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	CallerGroups []string `json:"callerGroups,omitempty"`

	// dataClass is the tool's effective data class when it was called.
	// +required
	DataClass DataClass `json:"dataClass"`

	// argumentsHash is sha256:<hex> of the call's arguments in canonical
	// JSON (object keys sorted); the same hash is in the audit records. The
	// arguments themselves are not stored.
	// +required
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	// +kubebuilder:validation:MaxLength=71
	ArgumentsHash string `json:"argumentsHash"`

	// definitionHash is the tool's definition hash when it was called: an
	// approval is not used for a tool whose definition changed since.
	// +required
	// +kubebuilder:validation:MaxLength=128
	DefinitionHash string `json:"definitionHash"`

	// expiresAt is when the approval lapses, decided or not.
	// +required
	ExpiresAt metav1.Time `json:"expiresAt"`

	// seal is the gateway's signature over the call: an approval object
	// the gateway did not write is never used.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Seal string `json:"seal"`

	// decision is Pending until a person sets Approved or Denied, once.
	// +optional
	// +default="Pending"
	Decision CallDecision `json:"decision,omitempty"`

	// decidedBy is the user name of who decided; the API server refuses
	// any other value than the name of the user making the change.
	// +optional
	// +default=""
	// +kubebuilder:validation:MaxLength=512
	DecidedBy string `json:"decidedBy,omitempty"`

	// reason is the decider's note, shown to the agent and in the audit
	// trail's Event.
	// +optional
	// +default=""
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// McpCallApprovalStatus is written by the gateway.
type McpCallApprovalStatus struct {
	// consumedAt is when the gateway used the approval for the call. An
	// approval is used once, whichever gateway replica gets the retry; once
	// set, the API server refuses to clear or change it (or callID).
	// +optional
	ConsumedAt *metav1.Time `json:"consumedAt,omitempty"`

	// callID is the audit call id of the call the approval was used for.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CallID string `json:"callID,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcpca,categories={mcp,mcp-catalog}
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.decision`
// +kubebuilder:printcolumn:name="Tool",type=string,JSONPath=`.spec.tool`
// +kubebuilder:printcolumn:name="Caller",type=string,JSONPath=`.spec.caller`
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.dataClass`
// +kubebuilder:printcolumn:name="Expires",type=string,format=date-time,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Decided By",type=string,JSONPath=`.spec.decidedBy`
// +kubebuilder:printcolumn:name="Used",type=string,format=date-time,JSONPath=`.status.consumedAt`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.consumedAt) || (has(self.status) && has(self.status.consumedAt) && self.status.consumedAt == oldSelf.status.consumedAt && (has(self.status.callID) ? self.status.callID : '') == (has(oldSelf.status.callID) ? oldSelf.status.callID : ''))",message="an approval once used stays used: status.consumedAt and status.callID cannot change once set"

// McpCallApproval is a call of a tool that requires approval, waiting for
// a person other than the caller to approve or deny it. The gateway creates
// it, uses an approved one once for the call it names, and deletes it
// after it expires.
type McpCallApproval struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the call and its decision.
	// +required
	Spec McpCallApprovalSpec `json:"spec"`

	// status is what the gateway did with the approval.
	// +optional
	Status McpCallApprovalStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpCallApprovalList is a list of McpCallApprovals.
type McpCallApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpCallApproval `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpCallApproval{}, &McpCallApprovalList{})
}
