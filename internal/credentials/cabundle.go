package credentials

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/egress"
	"github.com/mcp-catalog/operator/internal/logging"
)

// CABundleNotUsableMessage is the text of every *UnusableCABundleError.
const CABundleNotUsableMessage = "the CA bundle spec.tls.caBundleRef names cannot be used: it must be a key, holding PEM-encoded CA certificates that parse, " +
	"of a ConfigMap or of a Secret labelled " + mcpv1alpha1.LabelCABundle + `="` + mcpv1alpha1.LabelCABundleValue + `"` + " in this namespace"

// UnusableCABundleError says the CA bundle spec.tls.caBundleRef names
// cannot be used. It reads the same whatever the cause: the object or its
// key is missing, the Secret did not opt in, the key holds no certificate
// or one that does not parse, or the operator may not read the object.
// Whoever may write the reference may not be allowed to read the Secret, and
// telling the causes apart would tell them whether a Secret of that name
// exists and what it holds. The cause is logged at debug level, naming the
// object and key and never the content. Like a missing credential it is
// cured by editing the referenced object, which is not watched, so callers
// wait and look again.
type UnusableCABundleError struct{}

func (e *UnusableCABundleError) Error() string { return CABundleNotUsableMessage }

// CABundle reads and parses the CA bundle tls names, from a ConfigMap or a
// Secret in ns, with a direct read from the API server (neither kind is
// watched or listed; docs/adr/003-secret-access.md). It returns nil when tls
// names none, and *UnusableCABundleError when the bundle cannot be used;
// other errors are failures to reach the API server.
//
// A Secret is read only when it opted in with LabelCABundle, or with
// LabelCredential, which consents to more. A bundle is never sent anywhere,
// but the answer to "is it usable" is still something its reader learns.
func CABundle(ctx context.Context, r client.Reader, ns string, tls *mcpv1alpha1.TLSSettings) (*egress.CABundle, error) {
	if tls == nil || tls.CABundleRef == nil {
		return nil, nil
	}
	ref := tls.CABundleRef
	var (
		kind, name, key string
		obj             client.Object
	)
	unusable := func(cause string) error {
		logging.FromContext(ctx, logging.Credentials).V(logging.Debug).Info("the CA bundle spec.tls.caBundleRef names is not usable",
			"kind", kind, "namespace", ns, "name", name, "key", key, "cause", cause)
		return &UnusableCABundleError{}
	}
	switch {
	case ref.ConfigMapKeyRef != nil:
		kind, name, key = "ConfigMap", ref.ConfigMapKeyRef.Name, ref.ConfigMapKeyRef.Key
		obj = &corev1.ConfigMap{}
	case ref.SecretKeyRef != nil:
		kind, name, key = "Secret", ref.SecretKeyRef.Name, ref.SecretKeyRef.Key
		obj = &corev1.Secret{}
	default:
		// The API server refuses this; objects stored before the rule
		// existed are refused here.
		return nil, unusable("names neither a ConfigMap nor a Secret")
	}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return nil, unusable("no such object")
		case apierrors.IsForbidden(err):
			return nil, unusable("the operator may not read it")
		}
		return nil, fmt.Errorf("reading the CA bundle spec.tls.caBundleRef names: %w", err)
	}
	var data []byte
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if v, ok := o.Data[key]; ok {
			data = []byte(v)
		} else {
			data = o.BinaryData[key]
		}
	case *corev1.Secret:
		if !caBundleOptedIn(o) {
			// Not a byte of it is looked at.
			return nil, unusable(fmt.Sprintf("the Secret carries neither %s=%q nor %s=%q",
				mcpv1alpha1.LabelCABundle, mcpv1alpha1.LabelCABundleValue, mcpv1alpha1.LabelCredential, mcpv1alpha1.LabelCredentialValue))
		}
		data = o.Data[key]
	}
	if len(data) == 0 {
		return nil, unusable("no such key, or it is empty")
	}
	b, err := egress.ParseCABundle(data)
	if err != nil {
		var invalid *egress.InvalidCABundleError
		if !errors.As(err, &invalid) {
			return nil, unusable("it cannot be parsed")
		}
		// The parser's errors name a certificate's position and the x509
		// failure, never the bytes.
		return nil, unusable(invalid.Error())
	}
	return b, nil
}

// caBundleOptedIn reports whether a Secret agreed to be read as a CA bundle.
func caBundleOptedIn(s *corev1.Secret) bool {
	return s.Labels[mcpv1alpha1.LabelCABundle] == mcpv1alpha1.LabelCABundleValue ||
		s.Labels[mcpv1alpha1.LabelCredential] == mcpv1alpha1.LabelCredentialValue
}
