package v1alpha1

// DataClass is the classification of what a server's tools return. The
// classes are ordered: Public < Internal < Confidential < Restricted.
// +kubebuilder:validation:Enum=Public;Internal;Confidential;Restricted
type DataClass string

const (
	// DataClassPublic is output anyone may read.
	DataClassPublic DataClass = "Public"
	// DataClassInternal is output for members of the organisation.
	DataClassInternal DataClass = "Internal"
	// DataClassConfidential is output for a need-to-know audience.
	DataClassConfidential DataClass = "Confidential"
	// DataClassRestricted is the most sensitive output.
	DataClassRestricted DataClass = "Restricted"
)

// dataClassRank orders the classes; an unknown class ranks above every known
// one so that a value the API server should have rejected never loosens a
// decision.
var dataClassRank = map[DataClass]int{
	DataClassPublic:       0,
	DataClassInternal:     1,
	DataClassConfidential: 2,
	DataClassRestricted:   3,
}

// Rank returns the position of the class in the order Public < Internal <
// Confidential < Restricted. Unknown values rank highest.
func (c DataClass) Rank() int {
	if r, ok := dataClassRank[c]; ok {
		return r
	}
	return len(dataClassRank)
}

// Valid reports whether c is one of the four declared classes.
func (c DataClass) Valid() bool {
	_, ok := dataClassRank[c]
	return ok
}

// MaxDataClass returns the higher of two classes.
func MaxDataClass(a, b DataClass) DataClass {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

// SecretKeySelector names one key of a Secret in the referring object's own
// namespace. It is the only way any spec in this API points at a credential.
// +kubebuilder:validation:XValidation:rule="!has(self.__namespace__)",message="a Secret reference cannot name a namespace: the Secret is always read from the referring object's own namespace"
type SecretKeySelector struct {
	// name is the name of the Secret, in the same namespace as the referring
	// object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key is the key within the Secret's data that holds the value.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`

	// namespace must stay unset. It exists only so that a manifest that tries
	// to read a Secret from another namespace is rejected with a clear message
	// instead of having the field silently dropped.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// LocalObjectReference names an object of a known kind in the referring
// object's own namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// TLSSettings tunes how the operator verifies a server's TLS certificate.
type TLSSettings struct {
	// caBundleRef names PEM-encoded CA certificates, in the referring
	// object's namespace, that are trusted instead of the system roots when
	// verifying the server's certificate. Unset uses the system roots.
	// +optional
	CABundleRef *CABundleReference `json:"caBundleRef,omitempty"`
}

// CABundleReference names one key of a ConfigMap or of a Secret, in the
// referring object's own namespace, holding PEM-encoded CA certificates. A
// CA bundle is public: a ConfigMap is the natural home, a Secret is accepted
// for teams that keep it there once it carries the label
// mcp.catalog.dev/ca-bundle: "true" (or mcp.catalog.dev/credential: "true").
// +kubebuilder:validation:XValidation:rule="[has(self.configMapKeyRef), has(self.secretKeyRef)].filter(x, x).size() == 1",message="caBundleRef needs exactly one of configMapKeyRef or secretKeyRef"
type CABundleReference struct {
	// configMapKeyRef names the ConfigMap key holding the bundle.
	// +optional
	ConfigMapKeyRef *ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`

	// secretKeyRef names the Secret key holding the bundle. The Secret is
	// read only once it carries the label mcp.catalog.dev/ca-bundle: "true"
	// (or mcp.catalog.dev/credential: "true").
	// +optional
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
}

// ConfigMapKeySelector names one key of a ConfigMap in the referring
// object's own namespace.
type ConfigMapKeySelector struct {
	// name is the name of the ConfigMap, in the same namespace as the
	// referring object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key is the key within the ConfigMap's data (or binaryData) that holds
	// the value.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// ToolEffect is one thing a tool's calls may do, as a person reviewed it
// (McpTool spec.reviewedEffects). A tool whose effects nobody reviewed for
// its approved definition has them all: the server's own hints never
// count.
// +kubebuilder:validation:Enum=Write;Destructive;NonIdempotent;OpenWorld
type ToolEffect string

const (
	// EffectWrite: the tool may modify its environment (it was not
	// reviewed as read-only).
	EffectWrite ToolEffect = "Write"
	// EffectDestructive: the tool may delete or overwrite what exists.
	EffectDestructive ToolEffect = "Destructive"
	// EffectNonIdempotent: calling the tool twice with the same arguments
	// may do more than calling it once.
	EffectNonIdempotent ToolEffect = "NonIdempotent"
	// EffectOpenWorld: the tool reaches entities outside the server's own
	// domain (the internet, other people).
	EffectOpenWorld ToolEffect = "OpenWorld"
)
