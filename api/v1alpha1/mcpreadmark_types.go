package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// McpReadMarkSpec is what one caller has read through the gateway in this
// namespace, by data class, for the write-down rule of an McpAccessPolicy
// (spec.writeDown). The gateway writes it before it returns a result that
// raises the mark; deleting the object is a person's reset of the rule
// for that caller.
type McpReadMarkSpec struct {
	// caller is the user name of the caller (a ServiceAccount's
	// system:serviceaccount:<namespace>:<name>, or a person's mapped user
	// name); the object's name is derived from it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Caller string `json:"caller"`

	// marks hold, per data class, the read that last set the class's
	// expiry. A class whose expiresAt has passed holds nothing.
	// +optional
	// +listType=map
	// +listMapKey=dataClass
	// +kubebuilder:validation:MaxItems=4
	Marks []ReadMark `json:"marks,omitempty"`
}

// ReadMark is the read of one data class that set its mark.
type ReadMark struct {
	// dataClass is the effective data class of the result read.
	// +required
	DataClass DataClass `json:"dataClass"`

	// tool is the tool's name as the caller called it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=192
	Tool string `json:"tool"`

	// readAt is when the gateway returned that result.
	// +required
	ReadAt metav1.Time `json:"readAt"`

	// expiresAt is when the mark of this class stops holding: at least the
	// policy's window after the last read of the class, at most half a
	// window more.
	// +required
	ExpiresAt metav1.Time `json:"expiresAt"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mcprm,categories={mcp,mcp-catalog}
// +kubebuilder:printcolumn:name="Caller",type=string,JSONPath=`.spec.caller`
// +kubebuilder:printcolumn:name="Classes",type=string,JSONPath=`.spec.marks[*].dataClass`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// McpReadMark records, for one caller of this namespace, the most
// sensitive data it has received through the gateway within the write-down
// window of its McpAccessPolicy. Every gateway replica reads it before a
// call the rule could refuse.
type McpReadMark struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the caller has read.
	// +required
	Spec McpReadMarkSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// McpReadMarkList is a list of McpReadMarks.
type McpReadMarkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpReadMark `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpReadMark{}, &McpReadMarkList{})
}
