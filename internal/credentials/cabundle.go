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
	"github.com/mcp-catalog/operator/internal/cabundle"
)

// InvalidCABundleError says the referenced CA bundle was read but holds no
// usable certificate. Its text names the object and key, never the
// content. Like a bad credential value it is cured by editing the
// referenced object, which is not watched, so callers retry it.
type InvalidCABundleError struct {
	Err error
}

func (e *InvalidCABundleError) Error() string { return e.Err.Error() }
func (e *InvalidCABundleError) Unwrap() error { return e.Err }

// CABundle reads and parses the CA bundle tls names, from a ConfigMap or a
// Secret in ns, with a direct read from the API server (neither kind is
// watched or listed; docs/adr/003-secret-access.md). It returns nil when tls
// names none. A missing object or key is a *MissingError with the reason
// CABundleNotFound; a bundle without a parsable certificate is an
// *InvalidCABundleError.
//
// A bundle held in a Secret is read without the credential opt-in a
// Secret needs before its value is sent anywhere: CA certificates are
// public, and the bundle is only used to verify a server, never sent.
func CABundle(ctx context.Context, r client.Reader, ns string, tls *mcpv1alpha1.TLSSettings) (*cabundle.Bundle, error) {
	if tls == nil || tls.CABundleRef == nil {
		return nil, nil
	}
	ref := tls.CABundleRef
	var (
		data     []byte
		kind     string
		name     string
		key      string
		obj      client.Object
		notFound = func() error {
			return &MissingError{Reason: mcpv1alpha1.ReasonCABundleNotFound,
				Err: fmt.Errorf("no %s %q in namespace %q (spec.tls.caBundleRef)", kind, name, ns)}
		}
	)
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
		return nil, &InvalidCABundleError{Err: errors.New("spec.tls.caBundleRef names neither a ConfigMap nor a Secret")}
	}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound()
		}
		return nil, fmt.Errorf("reading %s %q: %w", kind, name, err)
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if v, ok := o.Data[key]; ok {
			data = []byte(v)
		} else {
			data = o.BinaryData[key]
		}
	case *corev1.Secret:
		data = o.Data[key]
	}
	if len(data) == 0 {
		return nil, &MissingError{Reason: mcpv1alpha1.ReasonCABundleNotFound,
			Err: fmt.Errorf("the %s %q has no non-empty key %q (spec.tls.caBundleRef)", kind, name, key)}
	}
	b, err := cabundle.Parse(data)
	if err != nil {
		return nil, &InvalidCABundleError{Err: fmt.Errorf("the %s %q key %q (spec.tls.caBundleRef): %w", kind, name, key, err)}
	}
	return b, nil
}
