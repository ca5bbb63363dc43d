package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Token types of RFC 8693 that a subject token may have.
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
	TokenTypeIDToken     = "urn:ietf:params:oauth:token-type:id_token"
)

// McpDelegationProfileSpec describes a token endpoint that exchanges an
// actor's token for one scoped to an MCP server (RFC 8693), and the explicit
// map of actors allowed to use it.
// +kubebuilder:validation:XValidation:rule="!has(self.actors) || self.actors.all(a, !has(a.allowedAudiences) || a.allowedAudiences.all(x, x in self.allowedAudiences))",message="spec.actors[].allowedAudiences must be a subset of spec.allowedAudiences"
// +kubebuilder:validation:XValidation:rule="!has(self.actors) || self.actors.all(a, !has(a.allowedScopes) || (has(self.allowedScopes) && a.allowedScopes.all(x, x in self.allowedScopes)))",message="spec.actors[].allowedScopes must be a subset of spec.allowedScopes"
type McpDelegationProfileSpec struct {
	// tokenEndpoint is the OAuth 2.0 token endpoint; https only. User
	// information, fragments and query parameters named like a credential
	// (the same names as an McpServer's url refuses) are not allowed, and a
	// refused URL is not repeated in the refusal (reason Forbidden).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.lowerAscii().startsWith('https://')",message="spec.tokenEndpoint must be an https URL",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getHostname() != ''",message="spec.tokenEndpoint must be an absolute URL with a host",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@')",message="spec.tokenEndpoint must not contain user information",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.contains('#')",message="spec.tokenEndpoint must not contain a fragment",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.lowerAscii().matches('^[^?]*[?]([^#]*&)?(([^=&#]*[-_.])?(key|sig|auth|pass|pwd|jwt)|[^=&#]*(token|secret|passw|signature|apikey|accesskey|credential|authori[sz]ation|session)[^=&#]*)(=|&|$)')",message="spec.tokenEndpoint must not carry a credential in its query (a parameter named like token, key, password, secret, sig or signature); the client secret belongs in clientSecretRef",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^?]*[?](.*;|(.*&)?[^=&]*%)')",message="spec.tokenEndpoint must not use ';' or percent-encoded parameter names in its query; separate parameters with '&' and write their names plainly",reason=FieldValueForbidden
	TokenEndpoint string `json:"tokenEndpoint"`

	// clientID identifies the operator to the token endpoint.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ClientID string `json:"clientID"`

	// clientSecretRef names the Secret key holding the client secret.
	// +required
	ClientSecretRef SecretKeySelector `json:"clientSecretRef"`

	// tls tunes the verification of the token endpoint's certificate, for
	// endpoints whose certificate a private CA issued.
	// +optional
	TLS *TLSSettings `json:"tls,omitempty"`

	// allowedAudiences are the audiences any exchange may request.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	AllowedAudiences []string `json:"allowedAudiences"`

	// allowedScopes are the scopes any exchange may request.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	AllowedScopes []string `json:"allowedScopes,omitempty"`

	// subjectTokenType is the RFC 8693 type of the actors' subject tokens.
	// +optional
	// +default="urn:ietf:params:oauth:token-type:access_token"
	// +kubebuilder:validation:Enum="urn:ietf:params:oauth:token-type:access_token";"urn:ietf:params:oauth:token-type:jwt";"urn:ietf:params:oauth:token-type:id_token"
	SubjectTokenType string `json:"subjectTokenType,omitempty"`

	// actors is the explicit map of who may have a token exchanged. An actor
	// not listed here is refused; cluster-admin rights create no entry.
	// +optional
	// +listType=map
	// +listMapKey=identity
	// +kubebuilder:validation:MaxItems=256
	Actors []DelegationActor `json:"actors,omitempty"`
}

// SubjectTokenSource says where an actor's subject token comes from.
// +kubebuilder:validation:Enum=Secret;Caller
type SubjectTokenSource string

const (
	// SubjectTokenFromSecret: the Secret subjectTokenSecretRef names.
	SubjectTokenFromSecret SubjectTokenSource = "Secret"
	// SubjectTokenFromCaller: the OAuth access token the person presented
	// at the gateway for the call being made. Only a person's token is
	// used (a ServiceAccount's never leaves the gateway), and only at a
	// token endpoint on the origin of the issuer that issued it.
	SubjectTokenFromCaller SubjectTokenSource = "Caller"
)

// DelegationActor maps one Kubernetes identity to its subject token.
// +kubebuilder:validation:XValidation:rule="(has(self.subjectTokenFrom) && self.subjectTokenFrom == 'Caller') != has(self.subjectTokenSecretRef)",message="an actor names subjectTokenSecretRef, or takes the caller's token with subjectTokenFrom: Caller, not both"
type DelegationActor struct {
	// identity is the Kubernetes user name as authentication reports it,
	// for a ServiceAccount "system:serviceaccount:<namespace>:<name>".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=320
	Identity string `json:"identity"`

	// enabled must be true for the actor to be served.
	// +required
	Enabled *bool `json:"enabled"`

	// subjectTokenSecretRef names the Secret key holding this actor's
	// subject token; required unless subjectTokenFrom is Caller.
	// +optional
	SubjectTokenSecretRef *SecretKeySelector `json:"subjectTokenSecretRef,omitempty"`

	// subjectTokenFrom is where the subject token comes from: Secret (the
	// default, subjectTokenSecretRef) or Caller, the OAuth access token the
	// person (this identity) presented at the gateway for the call. Caller
	// sends that token only to a token endpoint on its issuer's origin.
	// +optional
	SubjectTokenFrom SubjectTokenSource `json:"subjectTokenFrom,omitempty"`

	// allowedAudiences narrows the profile's audiences for this actor;
	// unset means all of the profile's.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	AllowedAudiences []string `json:"allowedAudiences,omitempty"`

	// allowedScopes narrows the profile's scopes for this actor; unset means
	// all of the profile's.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	AllowedScopes []string `json:"allowedScopes,omitempty"`
}

// McpDelegationProfileStatus is what the controller observed.
type McpDelegationProfileStatus struct {
	// conditions are Ready, Reconciling and Stalled.
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
// +kubebuilder:resource:shortName=mcpdp,categories={mcp,mcp-catalog}
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.tokenEndpoint`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`

// McpDelegationProfile lets McpServers in its namespace authenticate tool
// calls with a token exchanged for the calling actor.
type McpDelegationProfile struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the declaration.
	// +required
	Spec McpDelegationProfileSpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	// +default={"observedGeneration":-1}
	Status McpDelegationProfileStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// McpDelegationProfileList is a list of McpDelegationProfiles.
type McpDelegationProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []McpDelegationProfile `json:"items"`
}

func init() {
	SchemeBuilder.Register(&McpDelegationProfile{}, &McpDelegationProfileList{})
}
